import type { Command } from 'commander';
import { addConnectionOptions } from '../connection';
import { withNats } from '../connection/nats-session';
import { helpExamples } from '../messages';
import { parseFormat, toJson, toYaml, writeOut } from '../output';
import { watchWithProgress } from './deploy.command';
import { renderRecap } from './run-format';
import { EXIT_DETACHED } from './watch-interrupt';

/** `granule watch RUN` — follows a run (again) as `deploy --watch` does, e.g. after a detach. */
export function registerWatchCommand(program: Command): void {
  addConnectionOptions(
    program
      .command('watch')
      .argument('<RUN>', 'run id')
      .summary('follow a run until it ends, then print its recap (reattach after Ctrl-C)')
      .description(
        'Follows a run as deploy --watch does: progress bars on a terminal, one line per event otherwise, then the recap. A run that has ended is shown at once.',
      )
      .option('-o, --output <FORMAT>', 'text|json|yaml (the recap)', 'text')
      .addHelpText(
        'after',
        `${helpExamples('granule watch 20261122-101500-ab12', 'granule watch 20261122-101500-ab12 -o json')}
Ctrl-C on a terminal asks whether to stop the run or detach; elsewhere it detaches.
Exit codes: 0 the run succeeded, 1 it did not (failed, stopped, refused), ${EXIT_DETACHED} detached with Ctrl-C (the run goes on).
`,
      ),
  ).action(async (runId: string, opts: { output: string; natsUrl?: string; subjectPrefix?: string }) => {
    const format = parseFormat(opts.output, ['text', 'json', 'yaml'] as const);
    await withNats(opts, async (s) => {
      const summary = await watchWithProgress(s, runId);
      await writeOut(format === 'text' ? renderRecap(summary) : format === 'json' ? toJson(summary) : toYaml(summary));
      if (summary.phase !== 'succeeded') process.exitCode = 1;
    });
  });
}
