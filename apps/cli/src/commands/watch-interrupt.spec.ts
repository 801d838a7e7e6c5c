import type { RunEventEntry } from '@granule/contracts';
import { describeEvent } from './run-format';
import { showsAboveBars } from './run-progress';
import {
  EXIT_DETACHED,
  WatchInterrupts,
  detachedMessage,
  interruptMode,
  parseInterruptAnswer,
} from './watch-interrupt';
import type { InterruptIo } from './watch-interrupt';

/** A terminal that answers from a script, and hooks that record what the watch was told to do. */
function harness(interactive: boolean, answers: (string | undefined)[], stopFails = false) {
  const did: string[] = [];
  const io: InterruptIo = {
    interactive,
    write: (text) => did.push(`say ${text.trim()}`),
    question: async (text) => {
      did.push(`ask ${text.trim()}`);
      return answers.shift();
    },
    exit: (code) => did.push(`exit ${code}`),
  };
  const interrupts = new WatchInterrupts(
    'r1',
    {
      pause: () => did.push('pause'),
      resume: () => did.push('resume'),
      stop: async () => {
        did.push('stop');
        if (stopFails) throw new Error('run r1 has ended (DeploymentSucceeded): there is nothing to stop');
      },
    },
    io,
  );
  return { did, interrupts };
}

const QUESTION = 'ask run r1 is still running: [s]top it, [d]etach (it goes on), or [c]ontinue watching?';
const DETACHED = `say ${detachedMessage('r1')}`;

describe('Ctrl-C during a watch', () => {
  it('interruptMode - asks on a terminal, detaches in a non-interactive shell', () => {
    expect([interruptMode(true), interruptMode(false)]).toEqual(['ask', 'detach']);
  });

  it('parseInterruptAnswer - s, d, c in any case or spelled out; an empty line continues; else ask again', () => {
    expect(['s', 'STOP', ' d ', 'detach', '', 'c', 'Continue', 'x', 'yes'].map(parseInterruptAnswer)).toEqual([
      'stop',
      'stop',
      'detach',
      'detach',
      'continue',
      'continue',
      'continue',
      undefined,
      undefined,
    ]);
  });

  it('non-interactive - detaches at once, says how to reattach, exits 130, never stops the run', async () => {
    const { did, interrupts } = harness(false, []);
    await interrupts.interrupted();
    expect(did).toEqual(['pause', DETACHED, `exit ${EXIT_DETACHED}`]);
    expect(detachedMessage('r1')).toBe(
      'detached from run r1: it goes on without this command; reattach with: granule watch r1 (stop it with: granule stop r1)',
    );
    expect(EXIT_DETACHED).toBe(130);
  });

  it('interactive, stop - sends the stop and keeps watching; a second Ctrl-C then detaches', async () => {
    const { did, interrupts } = harness(true, ['s']);
    await interrupts.interrupted();
    expect(did).toEqual([
      'pause',
      QUESTION,
      'say stopping run r1: running tasks finish, nothing new starts (Ctrl-C again to detach)',
      'stop',
      'resume',
    ]);
    did.length = 0;
    await interrupts.interrupted();
    expect(did).toEqual(['pause', DETACHED, 'exit 130']);
  });

  it('interactive, detach - says how to reattach and exits 130', async () => {
    const { did, interrupts } = harness(true, ['d']);
    await interrupts.interrupted();
    expect(did).toEqual(['pause', QUESTION, 'pause', DETACHED, 'exit 130']);
  });

  it('interactive, continue - an unknown answer is asked again, then watching goes on untouched', async () => {
    const { did, interrupts } = harness(true, ['maybe', 'c']);
    await interrupts.interrupted();
    expect(did).toEqual([
      'pause',
      QUESTION,
      'say expected s (stop), d (detach) or c (continue), got "maybe"',
      QUESTION,
      'resume',
    ]);
  });

  it('interactive - Ctrl-C (or end of input) at the question detaches; a refused stop is said and watching goes on', async () => {
    const asked = harness(true, [undefined]);
    await asked.interrupts.interrupted();
    expect(asked.did.slice(-2)).toEqual([DETACHED, 'exit 130']);
    const refused = harness(true, ['stop'], true);
    await refused.interrupts.interrupted();
    expect(refused.did.slice(-3)).toEqual([
      'stop',
      'say error: run r1 has ended (DeploymentSucceeded): there is nothing to stop',
      'resume',
    ]);
  });
});

describe('Ctrl-C while the run ends', () => {
  it('the question is withdrawn when the watch ends: nothing is stopped, nothing detached, nothing drawn again', async () => {
    const did: string[] = [];
    let asked: (() => void) | undefined;
    const io: InterruptIo = {
      interactive: true,
      write: (text) => did.push(`say ${JSON.stringify(text)}`),
      question: (_text, signal) =>
        new Promise((resolve) => {
          asked = () => undefined;
          signal.addEventListener('abort', () => resolve(undefined));
        }),
      exit: (code) => did.push(`exit ${code}`),
    };
    const interrupts = new WatchInterrupts(
      'r1',
      { pause: () => did.push('pause'), resume: () => did.push('resume'), stop: async () => void did.push('stop') },
      io,
    );
    const pending = interrupts.interrupted();
    expect(asked).toBeDefined();
    interrupts.uninstall();
    await pending;
    expect(did).toEqual(['pause', 'say "\\n"']);
  });
});

describe('TTY progress - which lines go above the bars', () => {
  const entry = (version: number, event: RunEventEntry['event']): RunEventEntry =>
    ({ version, at: '2026-11-25T10:00:00.000Z', event }) as RunEventEntry;

  it('every failure and milestone is shown; what the bars count is not', () => {
    const lines = [
      entry(1, { type: 'TaskStarted', data: { key: 'a@1' } } as never),
      entry(2, { type: 'TaskSucceeded', data: { key: 'a@1', durationMs: 1000 } } as never),
      entry(3, { type: 'TaskFailed', data: { key: 'b@1', exitCode: 1, outputTail: 'boom\n' } } as never),
      entry(4, { type: 'TaskTimedOut', data: { key: 'c@1' } } as never),
      entry(5, { type: 'NodeFailed', data: { node: '1', reason: 'task_failed', task: 'b' } } as never),
      entry(6, { type: 'DispatchRefused', data: {} } as never),
      entry(7, { type: 'DeploymentFailed', data: { reason: 'critical node 1 failed' } } as never),
    ].map(describeEvent);
    expect(lines.map(showsAboveBars)).toEqual([false, false, true, true, true, true, true]);
    // A phase run's lines are indented; the watch's own notices are no event and always shown.
    expect(showsAboveBars(`    ${lines[2]}`)).toBe(true);
    expect(showsAboveBars(`    ${lines[0]}`)).toBe(false);
    expect(showsAboveBars('10:00:00  no orchestrator answers; waiting up to 60 s')).toBe(true);
  });
});
