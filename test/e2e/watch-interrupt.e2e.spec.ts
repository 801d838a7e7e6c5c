import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import path from 'node:path';
import { E2eStack, FIXTURES, waitUntil } from './stack';

// Ctrl-C during `deploy --watch`: in a non-interactive shell it detaches (the run goes on and
// `granule watch RUN` follows it again); on a terminal (a pseudo-terminal from util-linux
// `script`) it asks, and `s` stops the run. The terminal's progress shows every failure line and
// ends on the run's final state.
const GROUPS = [
  '--tasks',
  path.join(FIXTURES, 'groups/tasks.yaml'),
  '--nodes',
  path.join(FIXTURES, 'groups/nodes.yaml'),
];

const hasScript = spawnSync('script', ['--version']).status === 0;
const quote = (arg: string): string => `'${arg.replace(/'/g, `'\\''`)}'`;

interface Running {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  exit: Promise<number | null>;
}

function start(argv: string[], env: Record<string, string>, cwd: string): Running {
  const child = spawn(argv[0], argv.slice(1), { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exit };
}

async function waitForOutput(r: Running, text: string | RegExp, what: string): Promise<void> {
  const seen = (): boolean => (typeof text === 'string' ? r.output().includes(text) : text.test(r.output()));
  try {
    await waitUntil(seen, what, 30_000);
  } catch (err) {
    throw new Error(`${(err as Error).message}\noutput so far:\n${r.output().slice(-3000)}`);
  }
}

describe('Ctrl-C during a watch (whole stack)', () => {
  let stack: E2eStack;

  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'watch_interrupt', agents: ['1', '2', '3', '4'] });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  it('non-interactive - Ctrl-C detaches with exit 130 and says how to reattach; the run goes on; watch follows it', async () => {
    stack.setSlow('configure@2', 4);
    const cmd = stack.cliCommand(['deploy', ...GROUPS, '--run-id', 'wi-detach', '--watch']);
    // stdin is a pipe: not a terminal, so nothing is asked.
    const r = start(cmd.argv, cmd.env, cmd.cwd);
    await waitForOutput(r, /TaskStarted\s+configure@2/, 'the watch to show configure@2 running');
    r.child.kill('SIGINT');
    expect(await r.exit).toBe(130);
    expect(r.output()).toContain(
      'detached from run wi-detach: it goes on without this command; reattach with: granule watch wi-detach (stop it with: granule stop wi-detach)',
    );
    expect(r.output()).not.toContain('RECAP');
    const events = await stack.waitForEnd('wi-detach');
    expect(events.map((e) => e.type)).not.toContain('DeploymentStopRequested');
    expect(events[events.length - 1].type).toBe('DeploymentSucceeded');
    stack.setSlow('configure@2', 0);

    const again = await stack.granule(['watch', 'wi-detach']);
    stack.assertExitedOk(again, 'granule watch wi-detach');
    expect(again.stdout.split('\n')[0]).toBe('RECAP run wi-detach: succeeded');
    expect(again.stderr).toMatch(/DeploymentSucceeded/);
  }, 90_000);

  (hasScript ? it : it.skip)(
    'on a terminal - Ctrl-C asks, s stops the run gracefully; the progress shows each failure and ends on the final state',
    async () => {
      stack.setFailing('configure@3');
      stack.setSlow('configure@2', 5);
      const cmd = stack.cliCommand(['deploy', ...GROUPS, '--run-id', 'wi-stop', '--watch']);
      // `script` gives the CLI a pseudo-terminal: stdin and stderr are terminals, Ctrl-C is a key.
      const line = `stty cols 160 rows 40; exec ${cmd.argv.map(quote).join(' ')}`;
      const r = start(['script', '-qec', line, '/dev/null'], cmd.env, cmd.cwd);
      await waitForOutput(r, /TaskFailed\s+configure@3: .*fails on purpose/, 'the failure line');
      r.child.stdin.write('\x03');
      await waitForOutput(
        r,
        'run wi-stop is still running: [s]top it, [d]etach (it goes on), or [c]ontinue watching?',
        'the question',
      );
      r.child.stdin.write('s\r');
      await waitForOutput(r, 'stopping run wi-stop: running tasks finish, nothing new starts', 'the stop');
      const code = await r.exit;
      r.child.stdin.end();
      const out = r.output();
      expect(code).toBe(1);
      expect(out).toContain('RECAP run wi-stop: stopped');
      // The bars' last drawing is the run's final state.
      const overall = [...out.matchAll(/overall\s*\|[^|]*\|\s*(\d+)\/(\d+) (\w+)/g)];
      expect(overall.length).toBeGreaterThan(0);
      expect(overall[overall.length - 1][3]).toBe('stopped');
      const events = await stack.events('wi-stop');
      expect(events.map((e) => e.type)).toEqual(
        expect.arrayContaining(['DeploymentStopRequested', 'DeploymentStopped']),
      );
      // A graceful stop: the slow task that was running finished, nothing after it started.
      expect(stack.ledger('wi-stop')).toContain('configure@2');
      expect(stack.ledger('wi-stop')).not.toContain('finish@2');
      stack.setFailing('configure@3', false);
      stack.setSlow('configure@2', 0);
    },
    90_000,
  );
});
