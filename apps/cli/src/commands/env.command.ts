import type { Command } from 'commander';
import { parse } from 'yaml';
import { FORBIDDEN_KEY_MESSAGE, InvalidInputError, UsageError, isForbiddenKey, setDottedPath } from '@granule/core';
import { ENVIRONMENT_STATUSES } from '@granule/config-model';
import type { EnvironmentStatus } from '@granule/config-model';
import type { EnvironmentView, UpdateEnvironmentRequest } from '@granule/contracts';
import { addConnectionOptions, printResult, withConfigStore } from '../connection';
import { CliSecrets } from '../inputs/seal-inputs';
import { helpExamples } from '../messages';

interface EnvOptions {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
  release?: string;
  plugin?: string[];
  setting?: string[];
  name?: string;
  status?: string;
}

const COLUMNS = ['id', 'name', 'status', 'release', 'plugins', 'nodes'];
const row = (e: EnvironmentView): Record<string, unknown> => ({
  ...e,
  release: `${e.release.name} ${e.release.version}`,
  plugins: e.plugins.map((p) => `${p.name}@${p.version}`),
  nodes: e.nodes.length,
});

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** `--setting a.b.c=VALUE` (repeatable): VALUE is read as YAML (`true`, `3`, `[a, b]`); `null` removes the key. */
export function parseSettings(items: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`--setting ${item}: expected PATH=VALUE, e.g. storage.ceph.value=true`);
    const raw = item.slice(eq + 1);
    let value: unknown;
    try {
      value = parse(raw);
    } catch {
      value = raw;
    }
    const key = item.slice(0, eq);
    const bad = key.split('.').find(isForbiddenKey);
    if (bad !== undefined)
      throw new InvalidInputError([
        { severity: 'error', code: 'INPUT_FORBIDDEN_KEY', path: `--setting ${key}`, message: FORBIDDEN_KEY_MESSAGE },
      ]);
    // One setting given twice, or a setting and one inside it (a=2 and a.b=1): whichever came
    // last would win without a word.
    const clash = Object.keys(out).find((k) => k === key || k.startsWith(`${key}.`) || key.startsWith(`${k}.`));
    if (clash !== undefined)
      throw new UsageError(
        clash === key
          ? `--setting ${key} is given twice: give it once`
          : `--setting ${clash} and --setting ${key} set the same setting (one is inside the other): give one`,
      );
    out[key] = value === undefined ? '' : value;
  }
  return out;
}

/** `granule env create|list|show|set` — environments (clusters) in the config-store. */
export function registerEnvCommand(program: Command): void {
  const env = program
    .command('env')
    .description('environments (clusters): a release, enabled plugins, settings, nodes');
  const leaf = (name: string, description: string): Command =>
    addConnectionOptions(env.command(name).description(description)).option(
      '-o, --output <format>',
      'json | yaml | table',
      'table',
    );

  leaf('create', 'create an environment from an installed release')
    .argument('<name>', 'environment name')
    .option('--release <id>', 'release id or name; default: the only installed release')
    .option('--plugin <id>', 'enable this plugin (repeatable)', collect)
    .option('--setting <path=value>', 'set a setting, e.g. common.debug.value=true (repeatable)', collect)
    .addHelpText(
      'after',
      '\nExample:\n  granule env create prod --release example-release --setting common.debug.value=true',
    )
    .action(async (name: string, opts: EnvOptions) => {
      const settings: Record<string, unknown> = {};
      for (const [p, v] of Object.entries(parseSettings(opts.setting ?? []))) setDottedPath(settings, p, v);
      const e = await withConfigStore(opts, async (c) =>
        c.request('env.create', {
          name,
          settings: await new CliSecrets(c).settings(settings),
          ...(opts.release ? { release: opts.release } : {}),
          ...(opts.plugin ? { plugins: opts.plugin } : {}),
        }),
      );
      await printResult(e, opts.output, { rows: [row(e)], columns: COLUMNS });
    });

  leaf('list', 'list environments')
    .addHelpText('after', helpExamples('granule env list', 'granule env list -o json'))
    .action(async (opts: EnvOptions) => {
      const list = await withConfigStore(opts, (c) => c.request('env.list', {}));
      await printResult(list, opts.output, { rows: list.map(row), columns: COLUMNS });
    });

  leaf('show', 'show one environment')
    .addHelpText('after', helpExamples('granule env show prod -o yaml'))
    .argument('<id>', 'environment id or name')
    .action(async (id: string, opts: EnvOptions) => {
      const e = await withConfigStore(opts, (c) => c.request('env.get', { id }));
      await printResult(e, opts.output, {
        rows: [{ ...row(e), settings: e.settings }],
        columns: [...COLUMNS, 'settings'],
      });
    });

  leaf('set', 'change an environment: name, status, settings')
    .argument('<id>', 'environment id or name')
    .option('--name <name>', 'new name')
    .option('--status <status>', ENVIRONMENT_STATUSES.join(' | '))
    .option('--setting <path=value>', 'set a setting (VALUE is YAML; null removes it; repeatable)', collect)
    .addHelpText('after', '\nExample:\n  granule env set prod --status operational --setting storage.ceph.value=false')
    .action(async (id: string, opts: EnvOptions) => {
      const req: UpdateEnvironmentRequest = { id };
      if (opts.name !== undefined) req.name = opts.name;
      if (opts.status !== undefined) req.status = opts.status as EnvironmentStatus;
      if (opts.setting) req.settings_patch = parseSettings(opts.setting);
      if (Object.keys(req).length === 1)
        throw new UsageError('env set: nothing to change: give --name, --status or --setting');
      const e = await withConfigStore(opts, async (c) => {
        if (req.settings_patch) req.settings_patch = await new CliSecrets(c).settingsPatch(req.settings_patch);
        return c.request('env.update', req);
      });
      await printResult(e, opts.output, {
        rows: [{ ...row(e), settings: e.settings }],
        columns: [...COLUMNS, 'settings'],
      });
    });
}
