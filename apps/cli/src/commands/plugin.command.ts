import type { Command } from 'commander';
import { InvalidInputError, UsageError, type Diagnostic } from '@granule/core';
import {
  TEMPLATE_PACKAGE_VERSIONS,
  assertValidPlugin,
  effectiveTree,
  loadPlugin,
  selectRelease,
  validatePlugin,
  type TemplatePackageVersion,
} from '@granule/plugin';
import {
  buildPluginPackage,
  createPluginFromTemplate,
  openPluginSource,
  type BuiltPackage,
} from '@granule/plugin-files';
import { EXIT_INVALID } from '../cli-error-handler';
import { helpExamples, renderFinding, summaryLine } from '../messages';
import { parseFormat, toJson, toYaml, writeOut } from '../output';

/** One finding in `plugin validate` output. */
export interface PluginFinding {
  code: string;
  message: string;
  file?: string;
  path?: string;
  line?: number;
}

/** `plugin validate` output. */
export interface PluginValidateOutput {
  valid: boolean;
  errors: PluginFinding[];
  warnings: PluginFinding[];
  info: PluginFinding[];
}

const finding = (d: Diagnostic): PluginFinding => {
  const f: PluginFinding = {
    code: d.code,
    message: d.taskId && !d.message.includes(`'${d.taskId}'`) ? `task '${d.taskId}': ${d.message}` : d.message,
  };
  if (d.file !== undefined) f.file = d.file;
  if (d.path !== undefined) f.path = d.path;
  if (d.line !== undefined) f.line = d.line;
  return f;
};

/** Validates a plugin directory or .tar.gz package; never throws for bad content. */
export async function validatePluginSource(source: string): Promise<PluginValidateOutput> {
  const report = await validatePlugin(await openPluginSource(source));
  const by = (s: Diagnostic['severity']): PluginFinding[] =>
    report.diagnostics.filter((d) => d.severity === s).map(finding);
  return { valid: report.valid, errors: by('error'), warnings: by('warning'), info: by('info') };
}

/**
 * Text form of a validation: one line per finding, as every command prints them (plan, deploy and
 * install print the same error and warning lines for an invalid plugin), then the summary.
 */
export function renderPluginValidation(out: PluginValidateOutput, source: string): string {
  const lines = [
    ...out.errors.map((f) => renderFinding({ severity: 'error', ...f })),
    ...out.warnings.map((f) => renderFinding({ severity: 'warning', ...f })),
    ...out.info.map((f) => renderFinding({ severity: 'info', ...f })),
  ];
  lines.push(summaryLine(source, { errors: out.errors.length, warnings: out.warnings.length, info: out.info.length }));
  return `${lines.join('\n')}\n`;
}

/** Options of `plugin load`. */
export interface PluginLoadOptions {
  release?: string;
  os?: string;
  releaseVersion?: string;
  fuelVersion?: string;
}

/**
 * The fully loaded data tree of a plugin for one release (after `_path` processing, the base
 * release merge and multi-release selection). Throws `InvalidInputError` on load errors.
 */
export async function loadPluginTree(source: string, opts: PluginLoadOptions = {}): Promise<Record<string, unknown>> {
  if ((opts.os === undefined) !== (opts.releaseVersion === undefined) && opts.release === undefined) {
    throw new UsageError('--os and --release-version go together (or name the release with --release NAME)');
  }
  const files = await openPluginSource(source);
  await assertValidPlugin(files);
  const plugin = await loadPlugin(files);
  const selected = selectRelease(plugin, opts);
  if ('error' in selected)
    throw new InvalidInputError([
      {
        severity: 'error',
        code: 'PLUGIN_NO_SUCH_RELEASE',
        message: selected.error,
        file: `${source.replace(/\/+$/, '')}/metadata.yaml`,
      },
    ]);
  const tree = effectiveTree(plugin, selected);
  const late = plugin.diagnostics.filter((d) => d.severity === 'error');
  if (late.length > 0) throw new InvalidInputError(late);
  return tree;
}

/** Builds the package; throws `InvalidInputError` with the validator's report for an invalid plugin. */
export async function buildPlugin(dir: string, out?: string): Promise<BuiltPackage> {
  return buildPluginPackage(dir, out);
}

/**
 * `granule plugin validate|load|build|create`: Fuel plugin packages (4.0.0, 5.0.0) and
 * releases as plugins, offline.
 */
export function registerPluginCommand(program: Command): Command {
  const plugin = program
    .command('plugin')
    .description(
      'validate, load, build and create plugins and releases-as-plugins (Fuel plugin packages 4.0.0 / 5.0.0)',
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  granule plugin validate examples/plugins/example-v5',
        '  granule plugin load examples/releases/example-release -o yaml',
        '  granule plugin build examples/plugins/example-v5 --out /tmp/example-v5-1.0.0.tar.gz',
        '  granule plugin create my_plugin --dir /tmp',
        '',
      ].join('\n'),
    );

  plugin
    .command('validate')
    .description('check a plugin directory or .tar.gz; exit 0 when valid (warnings allowed), 1 when not')
    .argument('<dir>', 'plugin directory or package (.tar.gz)')
    .option('-o, --output <format>', 'text | json | yaml', 'text')
    .addHelpText(
      'after',
      '\nJSON output: {"valid": bool, "errors": [{code, message, file, path, line?}], "warnings": [...], "info": [...]}\n' +
        helpExamples(
          'granule plugin validate examples/plugins/example-v5',
          'granule plugin validate my_plugin-1.0.0.tar.gz -o json',
        ),
    )
    .action(async (dir: string, opts: { output: string }) => {
      const format = parseFormat(opts.output, ['json', 'yaml', 'text'] as const);
      const out = await validatePluginSource(dir);
      await writeOut(
        format === 'json' ? toJson(out) : format === 'yaml' ? toYaml(out) : renderPluginValidation(out, dir),
      );
      // The report ends with its summary: exit 1 without saying it a second time.
      if (!out.valid) process.exitCode = EXIT_INVALID;
    });

  plugin
    .command('load')
    .description(
      'print the fully loaded data tree for one release (_path files loaded, base release merged, multi-release records chosen)',
    )
    .argument('<dir>', 'plugin directory or package (.tar.gz)')
    .option('--release <name>', 'release_name (or name) of the release; default: the first release')
    .option('--os <os>', 'operating system of the release (with --release-version)')
    .option('--release-version <version>', 'version of the release, e.g. mitaka-9.0 (with --os)')
    .option(
      '--fuel-version <version>',
      'Fuel version for fuel-version constraints; default: the highest of metadata fuel_version',
    )
    .option('-o, --output <format>', 'json | yaml', 'yaml')
    .addHelpText(
      'after',
      helpExamples(
        'granule plugin load examples/releases/example-release -o yaml',
        'granule plugin load examples/plugins/example-v5 --os debian --release-version 1.0.0 -o json',
      ),
    )
    .action(
      async (
        dir: string,
        opts: { release?: string; os?: string; releaseVersion?: string; fuelVersion?: string; output: string },
      ) => {
        const format = parseFormat(opts.output, ['json', 'yaml'] as const);
        const tree = await loadPluginTree(dir, opts);
        await writeOut(format === 'json' ? toJson(tree) : toYaml(tree));
      },
    );

  plugin
    .command('build')
    .description('validate and write a reproducible <name>-<version>.tar.gz (same input, same bytes)')
    .argument('<dir>', 'plugin directory')
    .option('--out <file>', 'package file; default: <name>-<version>.tar.gz next to the directory')
    .option('-o, --output <format>', 'text | json | yaml ({file, sha256})', 'text')
    .addHelpText(
      'after',
      helpExamples('granule plugin build examples/plugins/example-v5 --out /tmp/example-v5-1.0.0.tar.gz'),
    )
    .action(async (dir: string, opts: { out?: string; output: string }) => {
      const format = parseFormat(opts.output, ['json', 'yaml', 'text'] as const);
      const built = await buildPlugin(dir, opts.out);
      const data = { file: built.file, sha256: built.sha256 };
      await writeOut(
        format === 'json' ? toJson(data) : format === 'yaml' ? toYaml(data) : `${built.file}\nsha256 ${built.sha256}\n`,
      );
    });

  plugin
    .command('create')
    .description('write a new plugin from a template that validates cleanly')
    .argument('<name>', 'plugin name (lower-case letters, digits, _ and -)')
    .option('--package-version <version>', TEMPLATE_PACKAGE_VERSIONS.join(' | '), '5.0.0')
    .option('--dir <parent>', 'directory to create the plugin in', '.')
    .option('-o, --output <format>', 'text | json | yaml ({dir, files})', 'text')
    .addHelpText(
      'after',
      helpExamples(
        'granule plugin create my_plugin --dir /tmp',
        'granule plugin create legacy --package-version 4.0.0',
      ),
    )
    .action(async (name: string, opts: { packageVersion: string; dir: string; output: string }) => {
      const format = parseFormat(opts.output, ['json', 'yaml', 'text'] as const);
      if (!(TEMPLATE_PACKAGE_VERSIONS as readonly string[]).includes(opts.packageVersion)) {
        throw new UsageError(
          `--package-version ${opts.packageVersion}: expected one of ${TEMPLATE_PACKAGE_VERSIONS.join(', ')}`,
        );
      }
      const created = await createPluginFromTemplate(name, {
        packageVersion: opts.packageVersion as TemplatePackageVersion,
        parent: opts.dir,
      });
      const data = { dir: created.dir, files: created.files };
      await writeOut(
        format === 'json'
          ? toJson(data)
          : format === 'yaml'
            ? toYaml(data)
            : `${created.dir}\n${created.files.map((f) => `  ${f}`).join('\n')}\n`,
      );
    });

  return plugin;
}
