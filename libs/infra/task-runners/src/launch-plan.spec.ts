import { OUTPUT_DRAIN_MS, type ProcessSpec, planLaunch, taskEnvironment, TASK_IDENTITY_ENV } from './launch-plan';

const limits = { timeoutMs: 30_000, killGraceMs: 5000 };

describe('planLaunch', () => {
  it('plans the command with its arguments as argv, in its own session, with exactly its environment', () => {
    const env = { PATH: '/opt/bin', V: 'x' };
    expect(planLaunch({ command: 'puppet', args: ['apply', 'site.pp'], cwd: '/srv', env }, limits)).toEqual({
      file: 'puppet',
      argv: ['puppet', 'apply', 'site.pp'],
      cwd: '/srv',
      env,
      newSession: true,
      drainMs: OUTPUT_DRAIN_MS,
      stop: { timeoutMs: 30_000, termSignal: 'SIGTERM', killSignal: 'SIGKILL', graceMs: 5000, afterKillWaitMs: 2000 },
    });
  });

  it('keeps "no time limit" as null', () => {
    expect(
      planLaunch({ command: 'true', args: [], cwd: '/', env: {} }, { ...limits, timeoutMs: null }).stop.timeoutMs,
    ).toBe(null);
  });

  it('refuses what cannot reach exec: an empty command, a NUL byte in any string, naming the command', () => {
    const nul = 'contains a NUL byte';
    const cases: ProcessSpec[] = [
      { command: '/bin/sh', args: ['-c', 'a\0b'], cwd: '/', env: {} },
      { command: '/bin/sh', args: [], cwd: '/tmp\0', env: {} },
      { command: '/bin/sh', args: [], cwd: '/', env: { K: 'v\0' } },
      { command: '/bin/sh', args: [], cwd: '/', env: { 'K\0': 'v' } },
    ];
    for (const spec of cases) {
      expect(() => planLaunch(spec, limits)).toThrow(
        expect.objectContaining({
          code: 'ERR_INVALID_ARG_VALUE',
          message: expect.stringMatching(`^spawn /bin/sh: .*${nul}$`),
        }),
      );
    }
    expect(() => planLaunch({ command: '', args: [], cwd: '/', env: {} }, limits)).toThrow(
      'spawn: the command is empty',
    );
  });
});

describe('taskEnvironment', () => {
  it("layers the agent's environment, the configured additions and the task's identity, in that order", () => {
    const env = taskEnvironment(
      { PATH: '/usr/bin', GRANULE_RUN_ID: 'stale', KEEP: 'inherited' },
      { KEEP: 'configured', GRANULE_NODE_UID: 'configured' },
      { rootDir: '/var/lib/granule', runId: 'run-1', taskId: 'task-1', nodeUid: 'node-1' },
    );
    expect(env).toEqual({
      PATH: '/usr/bin',
      KEEP: 'configured',
      GRANULE_ROOT: '/var/lib/granule',
      GRANULE_RUN_ID: 'run-1',
      GRANULE_TASK_ID: 'task-1',
      GRANULE_NODE_UID: 'node-1',
    });
    expect([env[TASK_IDENTITY_ENV.runId], env[TASK_IDENTITY_ENV.taskId]]).toEqual(['run-1', 'task-1']);
  });
});
