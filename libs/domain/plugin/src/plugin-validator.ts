import { InvalidInputError } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { STANDARD_STAGE_IDS } from '@granule/planner';
import { ParseResult, TaskDefinition, mergeParseResults } from '@granule/task-model';
import { describeValue, formatPath, isPlainObject } from './data-file';
import { LoadContext, Origin } from './path-loader';
import { PluginFiles } from './plugin-files.port';
import {
  CONF_KEYS,
  ConfData,
  ConfKey,
  LoadedPlugin,
  SUPPORTED_PACKAGE_VERSIONS,
  UNSUPPORTED_PACKAGE_VERSIONS,
  loadPlugin,
  releaseGraphs,
} from './plugin-loader';
import { CONF_SCHEMAS, METADATA_SCHEMAS, RELEASE_SCHEMA, extensionReleaseSchema } from './plugin-schemas';
import {
  STANDARD_GRAPH_TYPES,
  checkPluginStages,
  parseLegacyList,
  parseRoleGroups,
  parseTaskList,
} from './plugin-tasks';
import { Schema, checkSchema } from './schema-check';
import { CONSTRAINT_KEYS } from './variant-selection';
import { compareNumbers, parseConstraint } from './version-compare';

/** What {@link validatePlugin} found. `valid` is false only for errors; warnings and info never fail. */
export interface PluginValidation {
  valid: boolean;
  name?: string;
  packageVersion?: string;
  kind: 'plugin' | 'release';
  diagnostics: Diagnostic[];
}

class Reporter {
  constructor(
    readonly ctx: LoadContext,
    readonly out: Diagnostic[],
  ) {}

  at(
    severity: Diagnostic['severity'],
    code: string,
    origin: Origin | undefined,
    rel: (string | number)[],
    message: string,
    taskId?: string,
  ): void {
    const full = [...(origin?.path ?? []), ...rel];
    const d: Diagnostic = { severity, code, message };
    if (origin) d.file = origin.file;
    if (full.length > 0) d.path = formatPath(full);
    const line = origin?.locate(full);
    if (line !== undefined) d.line = line;
    if (taskId !== undefined) d.taskId = taskId;
    this.out.push(d);
  }

  originOf(value: unknown): Origin | undefined {
    return typeof value === 'object' && value !== null ? this.ctx.origins.get(value) : undefined;
  }

  schema(value: unknown, schema: Schema, origin: Origin | undefined): void {
    for (const p of checkSchema(value, schema)) this.at(p.severity, p.code, origin, p.path, p.message);
  }
}

const isV2 = (version: unknown): boolean =>
  typeof version === 'string' &&
  /^\d+\.\d+\.\d+$/.test(version) &&
  compareNumbers(version.split('.').map(Number), [2, 0, 0]) >= 0;

/**
 * Validates a plugin directory (or package) through the port: every file against its schema,
 * the task files with the task parser, and the rules of seeds 000, 001 and 003 for package
 * versions 4.0.0 and 5.0.0 (1.0.0–3.0.0 are recognised and refused). Every problem is reported;
 * each diagnostic names the file, the key path, and what was expected.
 */
export async function validatePlugin(files: PluginFiles): Promise<PluginValidation> {
  const plugin = await loadPlugin(files);
  const out: Diagnostic[] = [...plugin.diagnostics];
  const result = (): PluginValidation => {
    const diagnostics = inReportOrder(dedupe(out).map((d) => underSource(d, files.label)));
    const v: PluginValidation = {
      valid: !diagnostics.some((d) => d.severity === 'error'),
      kind: plugin.kind,
      diagnostics,
    };
    if (plugin.name !== undefined) v.name = plugin.name;
    if (plugin.packageVersion !== undefined) v.packageVersion = plugin.packageVersion;
    return v;
  };
  const meta = plugin.rawMetadata;
  if (!meta) return result();
  const r = new Reporter(plugin.ctx, out);
  const metaOrigin = r.originOf(meta);
  const pv = meta.package_version === undefined ? undefined : String(meta.package_version);
  if (pv === undefined) {
    r.at('error', 'PLUGIN_MISSING_FIELD', metaOrigin, [], `missing required field 'package_version' (4.0.0 or 5.0.0)`);
    // The other fields are still checked (against 5.0.0, the current format), so one run names every missing key.
    r.schema(meta, withoutRequired(METADATA_SCHEMAS['5.0.0'], 'package_version'), metaOrigin);
    return result();
  }
  if ((UNSUPPORTED_PACKAGE_VERSIONS as readonly string[]).includes(pv)) {
    r.at(
      'error',
      'PLUGIN_UNSUPPORTED_PACKAGE_VERSION',
      metaOrigin,
      ['package_version'],
      `package_version ${pv} is a Fuel plugin format Granule recognises but does not read; convert the plugin to package_version 5.0.0 (or 4.0.0)`,
    );
    return result();
  }
  if (!(SUPPORTED_PACKAGE_VERSIONS as readonly string[]).includes(pv)) {
    r.at(
      'error',
      'PLUGIN_BAD_FIELD',
      metaOrigin,
      ['package_version'],
      `expected 4.0.0 or 5.0.0, got ${describeValue(meta.package_version)}`,
    );
    return result();
  }
  const v5 = pv === '5.0.0';
  r.schema(meta, METADATA_SCHEMAS[pv as '4.0.0' | '5.0.0'], metaOrigin);
  if (v5 && meta.fuel_version !== undefined) {
    r.at(
      'warning',
      'PLUGIN_DEPRECATED_FUEL_VERSION',
      metaOrigin,
      ['fuel_version'],
      `fuel_version is deprecated in package 5.0.0 and not used; declare the releases the plugin supports instead`,
    );
  }
  checkReleases(plugin, r, pv);
  checkConfFiles(plugin, r, pv);
  return result();
}

/**
 * The one gate in front of every use of a plugin (plan, deploy, install, build): validates it
 * and throws `InvalidInputError` carrying the validator's whole report (errors, warnings, notes)
 * when it is invalid, so each entry point refuses the same plugins with the same findings.
 */
export async function assertValidPlugin(files: PluginFiles): Promise<PluginValidation> {
  const validation = await validatePlugin(files);
  if (!validation.valid) throw new InvalidInputError(validation.diagnostics);
  return validation;
}

function checkReleases(plugin: LoadedPlugin, r: Reporter, pv: string): void {
  const meta = plugin.metadata;
  const releases = plugin.releases;
  const defining = releases.filter((x) => x.isRelease);
  if (defining.length > 0 && defining.length < releases.length) {
    r.at(
      'error',
      'PLUGIN_RELEASES_MIXED',
      r.originOf(plugin.rawMetadata),
      ['releases'],
      `a plugin either defines releases (is_release: true) or extends existing ones, not both; records ${defining.map((x) => x.index).join(', ')} define releases and ${releases
        .filter((x) => !x.isRelease)
        .map((x) => x.index)
        .join(', ')} extend`,
    );
  }
  if (defining.length > 0 && pv !== '5.0.0') {
    r.at(
      'error',
      'PLUGIN_RELEASE_NEEDS_V5',
      r.originOf(plugin.rawMetadata),
      ['package_version'],
      `releases defined with is_release: true need package_version 5.0.0, got ${pv}`,
    );
  }
  if (defining.length > 1) {
    r.at(
      'warning',
      'PLUGIN_MULTIPLE_RELEASES',
      r.originOf(plugin.rawMetadata),
      ['releases'],
      `the plugin defines ${defining.length} releases; one release per plugin keeps updates and upgrades simple`,
    );
  }
  if (defining.length > 0 && plugin.rawMetadata?.is_hotpluggable !== undefined) {
    r.at(
      'warning',
      'PLUGIN_HOTPLUGGABLE_IGNORED',
      r.originOf(plugin.rawMetadata),
      ['is_hotpluggable'],
      `is_hotpluggable is ignored for a plugin that defines a release`,
    );
  }
  for (const rel of releases) {
    const origin = r.originOf(rel.record) ?? {
      file: 'metadata.yaml',
      path: ['releases', rel.index],
      locate: () => undefined,
    };
    r.schema(rel.record, rel.isRelease ? RELEASE_SCHEMA : extensionReleaseSchema(pv), origin);
    if (
      rel.isRelease &&
      typeof rel.record.release_name === 'string' &&
      typeof meta.name === 'string' &&
      rel.record.release_name !== meta.name
    ) {
      r.at(
        'warning',
        'PLUGIN_RELEASE_NAME_MISMATCH',
        origin,
        ['release_name'],
        `release_name '${rel.record.release_name}' differs from the plugin name '${meta.name}'; use the same name`,
      );
    }
    if (pv === '5.0.0' && rel.record.mode !== undefined) {
      r.at('warning', 'PLUGIN_DEPRECATED_MODE', origin, ['mode'], `mode is deprecated in package 5.0.0 and ignored`);
    }
    const graphs = Array.isArray(rel.record.graphs) ? rel.record.graphs : [];
    const seen = new Set<string>();
    graphs.forEach((g, i) => {
      if (!isPlainObject(g) || typeof g.type !== 'string') return;
      if (seen.has(g.type))
        r.at(
          'error',
          'PLUGIN_DUPLICATE_GRAPH',
          origin,
          ['graphs', i, 'type'],
          `graph type '${g.type}' is declared twice in this release`,
        );
      seen.add(g.type);
      if (g.tasks === undefined && g.tasks_path === undefined)
        r.at('error', 'PLUGIN_MISSING_FIELD', origin, ['graphs', i], `a graph needs tasks_path (or tasks)`);
      else if (g.tasks !== undefined && g.tasks !== null && !Array.isArray(g.tasks))
        r.at(
          'error',
          'PLUGIN_BAD_FIELD',
          origin,
          ['graphs', i, 'tasks'],
          `expected a list of tasks, got ${describeValue(g.tasks)}`,
        );
      if (!(STANDARD_GRAPH_TYPES as readonly string[]).includes(g.type)) {
        r.at(
          'info',
          'PLUGIN_CUSTOM_GRAPH',
          origin,
          ['graphs', i, 'type'],
          `graph type '${g.type}' is not one of ${STANDARD_GRAPH_TYPES.join(', ')}; it is run only when asked for by name`,
        );
      }
    });
  }
}

function checkConfFiles(plugin: LoadedPlugin, r: Reporter, pv: string): void {
  const seen = new Set<unknown>();
  const confs: { key: ConfKey; conf: ConfData }[] = [];
  for (const key of CONF_KEYS) {
    for (const c of [plugin.root[key], ...plugin.releases.map((x) => x.conf[key])]) {
      if (c && !seen.has(c.data)) {
        seen.add(c.data);
        confs.push({ key, conf: c });
      }
    }
  }
  const v5 = pv === '5.0.0';
  const name = plugin.name;
  const allTasks: TaskDefinition[] = [];
  const taskLists: { origin: Origin | undefined; tasks: TaskDefinition[]; records: unknown[] }[] = [];
  const stats = { v2: 0, v1: 0 };

  for (const { key, conf } of confs) {
    const origin = r.originOf(conf.data) ?? { file: conf.file, path: [], locate: () => undefined };
    const data = conf.data;
    if (data === null || data === undefined) {
      continue;
    }
    switch (key) {
      case 'environment_config':
        r.schema(data, CONF_SCHEMAS.environment_config, origin);
        break;
      case 'volumes':
      case 'network_roles':
      case 'components':
        r.schema(data, CONF_SCHEMAS[key], origin);
        checkConstraintSyntax(r, key === 'volumes' && isPlainObject(data) ? data.volumes : data);
        break;
      case 'node_attributes':
      case 'nic_attributes':
      case 'bond_attributes':
        r.schema(data, CONF_SCHEMAS.attributes, origin);
        break;
      case 'node_roles': {
        if (!isPlainObject(data)) {
          r.at(
            'error',
            'PLUGIN_BAD_FIELD',
            origin,
            [],
            `expected a mapping of role name to role, got ${describeValue(data)}`,
          );
          break;
        }
        for (const [role, value] of Object.entries(data)) {
          const variants = Array.isArray(value) ? value : [value];
          variants.forEach((v, i) => {
            for (const p of checkSchema(v, CONF_SCHEMAS.node_role, Array.isArray(value) ? [role, i] : [role]))
              r.at(p.severity, p.code, origin, p.path, p.message);
          });
          checkConstraintSyntax(r, variants);
          const plain = variants.find(isPlainObject);
          if (plain) {
            const groups = parseRoleGroups(r.ctx, { [role]: plain }, conf.file, name);
            fixRolePaths(groups, role, origin, r);
            allTasks.push(...groups.tasks);
          }
        }
        break;
      }
      case 'deployment_tasks': {
        if (!Array.isArray(data)) {
          r.at('error', 'PLUGIN_BAD_FIELD', origin, [], `expected a list of tasks, got ${describeValue(data)}`);
          break;
        }
        const tasks = checkTaskRecords(r, data, conf.file, name);
        taskLists.push({ origin, tasks, records: data });
        allTasks.push(...tasks);
        data.forEach((rec, i) => {
          if (!isPlainObject(rec)) return;
          const ro = r.originOf(rec) ?? { ...origin, path: [...origin.path, i] };
          const id = typeof rec.id === 'string' ? rec.id : undefined;
          const two = isV2(rec.version);
          if (two) stats.v2++;
          else stats.v1++;
          if (v5) {
            if (!two)
              r.at(
                'error',
                'PLUGIN_TASK_VERSION_REQUIRED',
                ro,
                rec.version === undefined ? [] : ['version'],
                `package 5.0.0 needs 'version: 2.0.0' (or later) on every deployment task${rec.version === undefined ? '' : `, got ${describeValue(rec.version)}`}`,
                id,
              );
            if (rec.type === 'group')
              r.at(
                'error',
                'PLUGIN_GROUP_TASK_FORBIDDEN',
                ro,
                ['type'],
                `type: group is not available in package 5.0.0 deployment_tasks; list the tasks under the role's 'tasks:' in node_roles.yaml instead`,
                id,
              );
            if (rec.groups !== undefined)
              r.at(
                'warning',
                'PLUGIN_DEPRECATED_GROUPS',
                ro,
                ['groups'],
                `groups is deprecated in package 5.0.0; use roles`,
                id,
              );
            if (rec.role !== undefined)
              r.at(
                'warning',
                'PLUGIN_DEPRECATED_ROLE',
                ro,
                ['role'],
                `role is deprecated in package 5.0.0; use roles`,
                id,
              );
          } else {
            for (const k of ['cross-depends', 'cross-depended-by']) {
              if (rec[k] !== undefined && !two)
                r.at('error', 'PLUGIN_CROSS_DEPS_NEED_V2', ro, [k], `${k} needs 'version: 2.0.0' on the task`, id);
            }
            const strategy =
              isPlainObject(rec.parameters) && rec.parameters.strategy !== undefined
                ? ['parameters', 'strategy']
                : rec.strategy !== undefined
                  ? ['strategy']
                  : undefined;
            if (strategy && !two)
              r.at(
                'error',
                'PLUGIN_STRATEGY_NEEDS_V2',
                ro,
                strategy,
                `${strategy.join('.')} needs 'version: 2.0.0' on the task`,
                id,
              );
            if (two && rec.groups !== undefined)
              r.at(
                'warning',
                'PLUGIN_GROUPS_WITH_V2',
                ro,
                ['groups'],
                `groups is used with version 2.0.0; use roles`,
                id,
              );
          }
        });
        break;
      }
      case 'tasks': {
        const empty = Array.isArray(data) ? data.length === 0 : false;
        if (v5) {
          if (!empty)
            r.at(
              'error',
              'PLUGIN_TASKS_YAML_V5',
              origin,
              [],
              `tasks.yaml is not supported in package 5.0.0 and must be empty; move its tasks to deployment_tasks.yaml with version: 2.0.0 and a stage`,
            );
          break;
        }
        if (!empty)
          r.at(
            'warning',
            'PLUGIN_TASKS_YAML_DEPRECATED',
            origin,
            [],
            `tasks.yaml is deprecated and will not be read by package 5.0.0; move its tasks to deployment_tasks.yaml`,
          );
        if (!Array.isArray(data)) {
          r.at('error', 'PLUGIN_BAD_FIELD', origin, [], `expected a list of tasks, got ${describeValue(data)}`);
          break;
        }
        checkConstraintSyntax(r, data);
        const parsed = parseLegacyList(r.ctx, data, conf.file, name);
        r.out.push(...parsed.diagnostics);
        if (plugin.kind === 'plugin') r.out.push(...checkPluginStages(parsed.tasks));
        allTasks.push(...parsed.tasks);
        break;
      }
    }
  }

  for (const rel of plugin.releases) {
    for (const g of releaseGraphs(rel)) {
      if (!Array.isArray(g.records) || seen.has(g.records)) continue;
      seen.add(g.records);
      const tasks = checkTaskRecords(r, g.records, 'metadata.yaml', name);
      taskLists.push({ origin: r.originOf(g.records), tasks, records: g.records });
      allTasks.push(...tasks);
    }
  }

  if (plugin.kind === 'plugin') {
    for (const list of taskLists) r.out.push(...checkPluginStages(list.tasks));
  }
  checkDependencies(r, allTasks);

  if (stats.v1 + stats.v2 > 0) {
    const metaOrigin = r.originOf(plugin.rawMetadata);
    if (stats.v2 > 0) {
      r.at(
        'info',
        'PLUGIN_TASK_BASED_DEPLOYMENT',
        metaOrigin,
        [],
        `deployment tasks use version 2.0.0: they run with task-based deployment (cross-depends, per-task strategy); in Fuel 8.0 this needed the experimental task-based orchestrator, Fuel 7.0 and older cannot run them`,
      );
    } else {
      r.at(
        'info',
        'PLUGIN_TASK_BASED_DEPLOYMENT',
        metaOrigin,
        [],
        `no deployment task uses version 2.0.0; version 2.0.0 (task-based deployment, recommended since Fuel 9.0) adds cross-depends and per-task strategies`,
      );
    }
    if (!v5 && stats.v2 > 0) {
      r.at(
        'warning',
        'PLUGIN_RECOMMEND_V5',
        metaOrigin,
        ['package_version'],
        `tasks use version 2.0.0: package_version 5.0.0 is recommended for such plugins`,
      );
    }
  }
}

/** Parses task records one by one; duplicate ids are errors unless the records are variants (seed 001). */
function checkTaskRecords(r: Reporter, records: unknown[], file: string, plugin: string | undefined): TaskDefinition[] {
  const results = parseTaskList(r.ctx, records, file, plugin);
  for (const res of results) r.out.push(...res.diagnostics);
  checkConstraintSyntax(r, records);
  const seen = new Map<string, { record: unknown; index: number }>();
  records.forEach((rec, i) => {
    if (!isPlainObject(rec) || typeof rec.id !== 'string') return;
    const key = `${rec.id}\u0000${CONSTRAINT_KEYS.map((k) => JSON.stringify(rec[k] ?? null)).join('\u0000')}`;
    const first = seen.get(key);
    const origin = r.originOf(rec);
    if (first) {
      const firstOrigin = r.originOf(first.record);
      const firstLine = firstOrigin?.locate(firstOrigin.path);
      r.at(
        'error',
        'TASK_DUPLICATE_ID',
        origin,
        [],
        `task id '${rec.id}' is defined twice: ${firstOrigin?.file ?? file}${firstLine ? `:${firstLine}` : ''} and here; give multi-release variants different os-version/fuel-version constraints`,
        rec.id,
      );
    } else seen.set(key, { record: rec, index: i });
  });
  // The first record of each id stands for the group in dependency checks.
  const merged = mergeParseResults(results.map((x): ParseResult => ({ tasks: x.tasks, diagnostics: [] })));
  return merged.tasks;
}

function checkConstraintSyntax(r: Reporter, records: unknown): void {
  if (!Array.isArray(records)) return;
  for (const rec of records) {
    if (!isPlainObject(rec)) continue;
    for (const k of CONSTRAINT_KEYS) {
      if (rec[k] === undefined) continue;
      const parsed = parseConstraint(rec[k]);
      if ('error' in parsed)
        r.at(
          'error',
          'PLUGIN_BAD_VERSION_CONSTRAINT',
          r.originOf(rec),
          [k],
          parsed.error,
          typeof rec.id === 'string' ? rec.id : undefined,
        );
    }
  }
}

function fixRolePaths(result: ParseResult, role: string, origin: Origin, r: Reporter): void {
  for (const d of result.diagnostics) {
    if (!d.path?.startsWith(role) && origin.path.length > 0) d.path = `${formatPath(origin.path)}.${d.path ?? role}`;
    r.out.push(d);
  }
}

/** requires / required_for / cross-depends / group members naming no task of the plugin: warnings (they may be release tasks). */
function checkDependencies(r: Reporter, tasks: TaskDefinition[]): void {
  // The standard stage tasks are always there (the planner adds them).
  const ids = new Set<string>([...STANDARD_STAGE_IDS, ...tasks.map((t) => t.id)]);
  for (const t of tasks) {
    const refs: { kind: string; id: string }[] = [
      ...t.requires.map((id) => ({ kind: 'requires', id })),
      ...t.requiredFor.map((id) => ({ kind: 'required_for', id })),
      ...t.crossDepends.filter((c) => !c.isRegex).map((c) => ({ kind: 'cross-depends', id: c.name })),
      ...t.crossDependedBy.filter((c) => !c.isRegex).map((c) => ({ kind: 'cross-depended-by', id: c.name })),
      ...(t.tasks ?? []).map((id) => ({ kind: 'tasks', id })),
    ];
    for (const ref of refs) {
      if (ids.has(ref.id)) continue;
      const d: Diagnostic = {
        severity: 'warning',
        code: 'PLUGIN_DANGLING_DEPENDENCY',
        message: `${ref.kind} names '${ref.id}', which this plugin does not define; it must come from the release or another plugin`,
        file: t.source.file,
        taskId: t.id,
      };
      if (t.source.line) d.line = t.source.line;
      r.out.push(d);
    }
  }
}

/**
 * The plugin validator's findings name files as the user named the plugin: `DIR/metadata.yaml`,
 * `FILE.tar.gz/metadata.yaml`, the request's `source` for an upload. Every entry point (validate,
 * plan, deploy, install over NATS or HTTP, build) prints these same findings.
 */
function underSource(d: Diagnostic, label: string): Diagnostic {
  const root = label.replace(/\/+$/, '');
  if (root === '') return d;
  return { ...d, file: d.file === undefined ? root : `${root}/${d.file}` };
}

/** By file, then line; findings without a line first; otherwise in the order they were found. */
function inReportOrder(diagnostics: Diagnostic[]): Diagnostic[] {
  return diagnostics
    .map((d, i) => ({ d, i }))
    .sort((a, b) => (a.d.file ?? '').localeCompare(b.d.file ?? '') || (a.d.line ?? 0) - (b.d.line ?? 0) || a.i - b.i)
    .map((x) => x.d);
}

function withoutRequired(schema: Schema, key: string): Schema {
  return schema.t === 'object' ? { ...schema, required: schema.required?.filter((k) => k !== key) } : schema;
}

function dedupe(diagnostics: Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return diagnostics.filter((d) => {
    const key = JSON.stringify([d.severity, d.code, d.file, d.line, d.path, d.message]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
