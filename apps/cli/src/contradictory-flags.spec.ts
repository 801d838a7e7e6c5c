import { errorObject, exitCodeFor } from './cli-error-handler';
import { buildProgram } from './program';

/** Runs `granule ARGS` up to its first error (none of these reaches a service). */
async function refusal(args: string[]): Promise<{ exit: number; message: string }> {
  try {
    await buildProgram(args[0], { json: true }).parseAsync(['node', 'granule', ...args]);
  } catch (err) {
    return { exit: exitCodeFor(err), message: errorObject(err).message };
  }
  throw new Error(`expected granule ${args.join(' ')} to be refused`);
}

const RELEASE = 'examples/releases/example-release';

// Flags that contradict each other (one would be ignored, or they ask for opposite things) are a
// usage error (exit 2) naming both, before anything is read or sent.
describe('contradictory flags - a usage error naming both', () => {
  it.each([
    [
      ['retry', 'r1', '--failed-only', '--all-unfinished'],
      "option '--failed-only' cannot be used with option '--all-unfinished'",
    ],
    [['runs', 'events', 'r1', '--follow', '--at', '3'], "option '--at <N>' cannot be used with option '--follow'"],
    [['deploy', '--env', 'prod', '--dry-run', '--noop'], "option '--dry-run' cannot be used with option '--noop'"],
    [['deploy', '--env', 'prod', '--check', '--noop'], "option '--noop' cannot be used with option '--check'"],
    [['deploy', '--env', 'prod', '--check', '--dry-run'], "option '--check' cannot be used with option '--dry-run'"],
    [['deploy', '--env', 'prod', '--diff'], '--diff goes with --check (it shows what a check found)'],
    [
      ['deploy', '--env', 'prod', '--nodes', 'nodes.yaml', '--plugin', 'p1'],
      '--env plans from config-store (its release, plugins, nodes and settings); do not combine it with --nodes, --plugin',
    ],
    [
      ['deploy', '--env', 'prod', '--release', RELEASE],
      '--env plans from config-store (its release, plugins, nodes and settings); do not combine it with --release',
    ],
    [
      ['deploy', '--env', 'prod', '--strategy', 'rolling', '--graph', 'provisioning'],
      '--strategy deploys the provisioning and default graphs group by group; do not combine it with --graph provisioning',
    ],
    [['graph', '--run', 'r1', '--node', '1,2'], '--run exports the graph the run ran; --node goes with --env only'],
    [
      ['graph', '--run', 'r1', '--graph', 'provisioning', '--node', '1'],
      '--run exports the graph the run ran; --graph and --node go with --env only',
    ],
    [['graph', '--env', 'prod', '--run', 'r1'], 'give exactly one of --env ENV or --run RUN'],
    [
      ['plan', '--release', RELEASE, '--nodes', 'n.yaml', '--ready-order', 'astute-weight'],
      '--ready-order astute-weight orders a simulation: add --simulate',
    ],
    [
      ['plan', '--release', RELEASE, '--nodes', 'n.yaml', '--durations', 'd.yaml'],
      '--durations gives the seconds of a simulation: add --simulate',
    ],
    [['tasks', 'download', '--env', 'prod', '--release', '1'], 'give --env or --release, not both'],
  ])('granule %j', async (args, message) => {
    expect(await refusal(args)).toEqual({ exit: 2, message });
  });
});
