import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { parse } from 'yaml';
import { InvalidInputError, UsageError } from '@granule/core';
import type { TaskScope } from '@granule/contracts';
import { assertNoErrors, parseTaskFile } from '@granule/task-model';
import { readInputFile } from '../inputs/read-input';
import { CliSecrets } from '../inputs/seal-inputs';
import { toYaml } from '../output';
import { addConnectionOptions, printResult, withConfigStore } from '../connection';

interface TasksOptions {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
  env?: string;
  release?: string;
  dir: string;
  graph: string;
  start?: string;
  end?: string;
}

/** `--env` or `--release`, exactly one. */
function scopeOf(opts: TasksOptions): { scope: TaskScope; id: string } {
  if (opts.env && opts.release) throw new UsageError('give --env or --release, not both');
  if (opts.env) return { scope: 'environment', id: opts.env };
  if (opts.release) return { scope: 'release', id: opts.release };
  throw new UsageError('give --env ID or --release ID');
}

/** The file a graph is synced through: `deployment_tasks.yaml` for `default`, else `<graph>_graph.yaml` (as `granule plan` reads them). */
export function taskFileName(graph: string): string {
  return graph === 'default' ? 'deployment_tasks.yaml' : `${graph}_graph.yaml`;
}

/** `granule tasks download|upload` — seed 002's sync of deployment tasks with the config-store. */
export function registerTasksCommand(program: Command): void {
  const tasks = program
    .command('tasks')
    .description('download and upload the deployment tasks of a release or an environment');
  const leaf = (name: string, description: string): Command =>
    addConnectionOptions(tasks.command(name).description(description))
      .option('--env <id>', 'environment id or name')
      .option('--release <id>', 'release id or name')
      .option('--dir <dir>', 'directory of the task file', '.')
      .option('--graph <type>', 'graph type', 'default')
      .option('-o, --output <format>', 'json | yaml | table', 'table');

  leaf('download', 'write the tasks to DIR/deployment_tasks.yaml (an environment: release + plugins + its overrides)')
    .option('--start <task>', 'only this task and everything after it')
    .option('--end <task>', 'only this task and everything it needs')
    .addHelpText(
      'after',
      '\nExamples:\n  granule tasks download --release 1 --dir ./tasks\n  granule tasks download --env prod --start netconfig --end galera',
    )
    .action(async (opts: TasksOptions) => {
      const { scope, id } = scopeOf(opts);
      const view = await withConfigStore(opts, (c) =>
        c.request('tasks.get', {
          scope,
          id,
          graph: opts.graph,
          ...(opts.start ? { start: opts.start } : {}),
          ...(opts.end ? { end: opts.end } : {}),
        }),
      );
      const file = path.join(opts.dir, taskFileName(opts.graph));
      await mkdir(opts.dir, { recursive: true });
      await writeFile(file, toYaml(view.tasks));
      await printResult({ file, scope, id: view.id, graph: view.graph, tasks: view.tasks.length }, opts.output);
    });

  leaf('upload', "replace a release's tasks, or an environment's task overrides, with DIR/deployment_tasks.yaml")
    .addHelpText(
      'after',
      '\nExamples:\n  granule tasks upload --release 1 --dir ./tasks\n  granule tasks upload --env prod --dir ./overrides',
    )
    .action(async (opts: TasksOptions) => {
      const { scope, id } = scopeOf(opts);
      const file = path.join(opts.dir, taskFileName(opts.graph));
      const text = await readInputFile(file);
      // Checked here first so errors name the file and line; the config-store checks again.
      assertNoErrors(parseTaskFile(text, file, {}));
      const records = (parse(text) ?? []) as unknown[];
      if (!Array.isArray(records))
        throw new InvalidInputError([
          { severity: 'error', code: 'TASK_BAD_RECORD', file, message: 'expected a list of tasks' },
        ]);
      const view = await withConfigStore(opts, async (c) =>
        c.request('tasks.put', {
          scope,
          id,
          tasks: await new CliSecrets(c).taskRecords(records, file),
          ...(scope === 'release' ? { graph: opts.graph } : {}),
        }),
      );
      await printResult({ file, scope, id: view.id, graph: view.graph, tasks: view.tasks.length }, opts.output);
    });
}
