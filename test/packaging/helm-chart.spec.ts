import { readdirSync } from 'node:fs';
import path from 'node:path';
import Ajv from 'ajv';
import { parse, parseAllDocuments } from 'yaml';
import { DEFAULT_HEALTH_PORTS } from '@granule/observability';
import { ROOT, readText, variablesRead } from './packaging-files';

const CHART = 'helm/granule';
const chart = parse(readText(`${CHART}/Chart.yaml`)) as Record<string, unknown>;
const values = parse(readText(`${CHART}/values.yaml`)) as Record<string, unknown>;
const schema = JSON.parse(readText(`${CHART}/values.schema.json`)) as object;
const templateNames = readdirSync(path.join(ROOT, CHART, 'templates')).sort();
const templates = Object.fromEntries(templateNames.map((name) => [name, readText(`${CHART}/templates/${name}`)]));
const manifests = templateNames.filter((n) => n.endsWith('.yaml'));

/** ajv 6 (draft-07, what Helm validates values.schema.json with); every error, not only the first. */
function validate(data: unknown): string[] {
  const ajv = new Ajv({ allErrors: true });
  const ok = ajv.validate(schema, data);
  return ok ? [] : (ajv.errors ?? []).map((e) => `${e.dataPath || '(root)'} ${e.message}`);
}

const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** `.Values.a.b` paths a template reads (also through `$.Values` and `.root.Values`). */
function valuePaths(text: string): string[] {
  return [...new Set([...text.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)].map((m) => m[1].slice(1)))].sort();
}

function hasPath(tree: unknown, dotted: string): boolean {
  let node = tree;
  for (const key of dotted.split('.')) {
    if (node === null || typeof node !== 'object' || !(key in node)) return false;
    node = (node as Record<string, unknown>)[key];
  }
  return true;
}

/** The template with its actions taken out: lines that are only an action vanish, inline ones become a scalar. */
function skeleton(text: string): string {
  return text
    .split('\n')
    .filter((line) => !/^\s*\{\{.*\}\}\s*$/.test(line) || /^\s*[\w./-]+:\s/.test(line))
    .map((line) => line.replace(/\{\{-?.*?-?\}\}/g, 'placeholder'))
    .join('\n');
}

/** Deployment template → the app its container runs. */
const DEPLOYMENTS: Record<string, keyof typeof DEFAULT_HEALTH_PORTS> = {
  'deployment-config-store.yaml': 'config-store',
  'deployment-graph-planner.yaml': 'graph-planner',
  'deployment-orchestrator.yaml': 'orchestrator',
};

describe('helm/granule', () => {
  it('Chart.yaml is a v2 application chart with a semver version', () => {
    expect([chart.apiVersion, chart.name, chart.type]).toEqual(['v2', 'granule', 'application']);
    expect(chart.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(typeof chart.appVersion).toBe('string');
  });

  it('values.yaml validates against values.schema.json', () => {
    expect(validate(values)).toEqual([]);
  });

  it('the schema refuses bad values, naming each one', () => {
    const bad = clone(values) as Record<string, Record<string, unknown>>;
    bad.orchestrator.replicas = 'two';
    bad.external.redis = { url: 'localhost:6379' };
    bad.secrets.apiToken = 'short';
    bad.configStore.extra = true;
    expect(validate(bad)).toEqual([
      '.external.redis.url should match pattern "^rediss?://\\S+$"',
      '.secrets.apiToken should match pattern "^(|.{16,})$"',
      '.configStore should NOT have additional properties',
      '.orchestrator.replicas should be integer',
    ]);
  });

  it('every .Values path a template reads exists in values.yaml', () => {
    const missing = templateNames.flatMap((name) =>
      valuePaths(templates[name])
        .filter((p) => !hasPath(values, p))
        .map((p) => `${name}: .Values.${p}`),
    );
    expect(missing).toEqual([]);
    expect(valuePaths(templates['deployment-orchestrator.yaml'])).toContain('orchestrator.replicas');
  });

  it('every value in values.yaml is read by some template (no dead settings)', () => {
    const read = new Set(templateNames.flatMap((name) => valuePaths(templates[name])));
    const leaves: string[] = [];
    const walk = (node: unknown, at: string): void => {
      // Maps handed to toYaml whole count as read when their parent is.
      if (read.has(at)) return;
      if (node !== null && typeof node === 'object' && !Array.isArray(node) && Object.keys(node).length > 0) {
        for (const [k, v] of Object.entries(node)) walk(v, at ? `${at}.${k}` : k);
      } else leaves.push(at);
    };
    walk(values, '');
    expect(leaves).toEqual([]);
  });

  it('template actions are balanced: {{ and }}, every if/range/with/define closed by its end', () => {
    for (const name of templateNames) {
      const text = templates[name];
      expect([name, (text.match(/\{\{/g) ?? []).length]).toEqual([name, (text.match(/\}\}/g) ?? []).length]);
      let depth = 0;
      for (const action of text.match(/\{\{-?\s*(if|range|with|define|block|end)\b/g) ?? []) {
        depth += /end$/.test(action) ? -1 : 1;
        expect([name, depth >= 0]).toEqual([name, true]);
      }
      expect([name, depth]).toEqual([name, 0]);
    }
  });

  it('every included template is defined in _helpers.tpl', () => {
    const defined = [...templates['_helpers.tpl'].matchAll(/\{\{-?\s*define "([^"]+)"/g)].map((m) => m[1]);
    const used = [
      ...new Set(
        templateNames.flatMap((n) => [...templates[n].matchAll(/\b(?:include|template) "([^"]+)"/g)].map((m) => m[1])),
      ),
    ];
    expect(used.filter((u) => !defined.includes(u))).toEqual([]);
  });

  it('the manifests are YAML once the template actions are taken out', () => {
    for (const name of manifests) {
      const docs = parseAllDocuments(skeleton(templates[name]));
      const errors = docs.flatMap((d) => d.errors.map((e) => e.message));
      expect([name, errors]).toEqual([name, []]);
      for (const doc of docs) {
        const object = doc.toJS() as { apiVersion?: string; kind?: string } | null;
        if (object) expect([name, typeof object.apiVersion, typeof object.kind]).toEqual([name, 'string', 'string']);
      }
    }
  });

  it('config-store, graph-planner and orchestrator: 2 replicas by default, probes on /healthz and /readyz', () => {
    expect([
      (values.configStore as { replicas: number }).replicas,
      (values.graphPlanner as { replicas: number }).replicas,
      (values.orchestrator as { replicas: number }).replicas,
    ]).toEqual([2, 2, 2]);
    const probes = templates['_helpers.tpl'];
    expect(probes).toContain('livenessProbe:\n  httpGet: { path: /healthz, port: health }');
    expect(probes).toContain('readinessProbe:\n  httpGet: { path: /readyz, port: health }');
    for (const name of Object.keys(DEPLOYMENTS)) {
      expect([name, templates[name].includes('{{- include "granule.probes" . | nindent 10 }}')]).toEqual([name, true]);
      expect([
        name,
        /- \{ name: health, containerPort: \{\{ \.Values\.\w+\.healthPort \}\} \}/.test(templates[name]),
      ]).toEqual([name, true]);
    }
  });

  it("each Deployment sets only GRANULE_* variables its service reads, and health ports default to the services' own", () => {
    const configMapKeys = [...templates['configmap.yaml'].matchAll(/^\s+(GRANULE_[A-Z_]+):/gm)].map((m) => m[1]);
    const secretKeys = ['GRANULE_DATABASE_URL', 'GRANULE_API_TOKEN', 'GRANULE_AGENT_TOKEN'];
    const unread: string[] = [];
    for (const [name, app] of Object.entries(DEPLOYMENTS)) {
      const read = variablesRead(app);
      const set = [...templates[name].matchAll(/name: (GRANULE_[A-Z_]+)/g)].map((m) => m[1]);
      for (const v of [...set, ...configMapKeys]) if (!read.includes(v)) unread.push(`${name}: ${v}`);
      const key = app === 'config-store' ? 'configStore' : app === 'graph-planner' ? 'graphPlanner' : 'orchestrator';
      expect([app, (values[key] as { healthPort: number }).healthPort]).toEqual([app, DEFAULT_HEALTH_PORTS[app]]);
    }
    expect(unread).toEqual([]);
    for (const key of secretKeys)
      expect([key, Object.keys(DEPLOYMENTS).some((app) => variablesRead(DEPLOYMENTS[app]).includes(key))]).toEqual([
        key,
        true,
      ]);
    expect(templates['secret.yaml']).toMatch(/stringData:\n\s+GRANULE_DATABASE_URL:/);
  });

  it('the migration Job is a pre-install/pre-upgrade hook running migrate.js with the config-store image', () => {
    const job = templates['migration-job.yaml'];
    expect(job.match(/helm\.sh\/hook: pre-install,pre-upgrade/g)).toHaveLength(2);
    expect(job).toContain('command: ["node", "dist/apps/config-store/src/migrate.js"]');
    expect(job).toContain('(dict "root" $ "component" "config-store")');
    // The hook Secret the Job reads is created before it.
    expect(job.indexOf('helm.sh/hook-weight: "-5"')).toBeLessThan(job.indexOf('kind: Job'));
  });

  it('the orchestrator names each replica after its pod (the run lease holder)', () => {
    expect(templates['deployment-orchestrator.yaml']).toContain(
      '- name: GRANULE_INSTANCE_ID\n              valueFrom: { fieldRef: { fieldPath: metadata.name } }',
    );
  });
});
