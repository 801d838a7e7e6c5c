import path from 'node:path';
import type { RunSummary, RunTasksReply } from '@granule/contracts';
import { E2eStack, FIXTURES, REPO_ROOT } from './stack';

// Seed 004's example on real agents: 11 nodes, the seed's strategy, a provisioning graph for
// prepare and a default graph for deploy; tasks fail on the nodes each example names.
const STRATEGY = path.join(REPO_ROOT, 'examples/strategies/deployment-strategy.yaml');
const NODES = path.join(REPO_ROOT, 'examples/strategies/nodes.yaml');
const TASKS = path.join(FIXTURES, 'strategy');
const UIDS = ['ntp01', 'ctl01', 'ctl02', 'ctl03', 'ctl04', 'cmp101', 'cmp102', 'cmp201', 'cmp202', 'mon01', 'mon02'];

describe('strategy runs on real agents (seed 004 processing examples)', () => {
  let stack: E2eStack;
  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'strategy', agents: UIDS });
  }, 120_000);
  afterAll(async () => stack?.stop(), 60_000);

  async function deploy(
    runId: string,
    fail: { prepare?: string[]; deploy?: string[] },
  ): Promise<{
    code: number | null;
    summary: RunSummary;
    simulated: { outcome: string; groups: Record<string, { status: string }>; nodes: Record<string, string> };
  }> {
    for (const uid of UIDS) {
      stack.setFailing(`prepare-node@${uid}`, fail.prepare?.includes(uid) ?? false);
      stack.setFailing(`deploy-node@${uid}`, fail.deploy?.includes(uid) ?? false);
    }
    const run = await stack.granule(
      [
        'deploy',
        '--tasks',
        TASKS,
        '--nodes',
        NODES,
        '--strategy',
        STRATEGY,
        '--watch',
        '--run-id',
        runId,
        '-o',
        'json',
      ],
      { timeoutMs: 180_000 },
    );
    const flags = [
      ...(fail.prepare?.length ? ['--fail-prepare', fail.prepare.join(',')] : []),
      ...(fail.deploy?.length ? ['--fail-deploy', fail.deploy.join(',')] : []),
    ];
    const sim = await stack.granule(['strategy', 'simulate', STRATEGY, '--nodes', NODES, ...flags, '-o', 'json']);
    expect(sim.code).toBe(0);
    return { code: run.code, summary: JSON.parse(run.stdout) as RunSummary, simulated: JSON.parse(sim.stdout) };
  }

  const statuses = (s: RunSummary): Record<string, string> =>
    Object.fromEntries((s.strategy?.groups ?? []).map((g) => [g.name, g.status]));
  const nodeStatus = (s: RunSummary): Record<string, string> =>
    Object.fromEntries(
      Object.entries(s.strategy?.nodes ?? {}).flatMap(([status, uids]) => uids.map((u) => [u, status])),
    );

  it('everything succeeds: every group deployed, the run succeeds, every node prepared then deployed once', async () => {
    const { code, summary, simulated } = await deploy('seed-ok', {});
    expect(code).toBe(0);
    expect(summary.strategy?.outcome).toBe('success');
    expect(statuses(summary)).toEqual(
      Object.fromEntries(Object.entries(simulated.groups).map(([g, v]) => [g, v.status])),
    );
    expect(nodeStatus(summary)).toEqual(simulated.nodes);
    const ledger = stack.ledger().filter((l) => l.startsWith('seed-ok-'));
    for (const uid of UIDS) {
      expect(ledger.filter((l) => l.endsWith(` prepare-node@${uid}`))).toHaveLength(1);
      expect(ledger.filter((l) => l.endsWith(` deploy-node@${uid}`))).toHaveLength(1);
    }
  }, 240_000);

  it('runs show --at N of a strategy run shows its phase runs as they were then; an N past the end is an error', async () => {
    const events = await stack.events('seed-ok');
    // The parent right after its first phase started: that phase run had done nothing yet.
    const first = events.find((e) => e.type === 'StrategyPhaseStarted');
    if (!first) throw new Error('no StrategyPhaseStarted');
    const shown = await stack.granule(['runs', 'show', 'seed-ok', '--at', String(first.version), '-o', 'json']);
    stack.assertExitedOk(shown, 'runs show --at');
    const then = JSON.parse(shown.stdout) as RunSummary;
    const now = JSON.parse((await stack.granule(['runs', 'show', 'seed-ok', '-o', 'json'])).stdout) as RunSummary;
    expect(now.totals.succeeded).toBeGreaterThan(0);
    expect(then.totals.succeeded).toBe(0);
    // Where the strategy run stands comes from its own fold, its version from its events.
    expect([then.phase, then.version, now.phase, now.version]).toEqual([
      'running',
      first.version,
      'succeeded',
      events.length,
    ]);
    expect(then.strategy?.phaseRuns).toHaveLength(1);
    // runs tasks answers for the phase runs the strategy run's fold lists.
    const tasks = await stack.granule(['runs', 'tasks', 'seed-ok', '-o', 'json']);
    stack.assertExitedOk(tasks, 'runs tasks');
    const taskRuns = new Set((JSON.parse(tasks.stdout) as RunTasksReply).tasks.map((t) => t.runId));
    expect([...taskRuns].sort()).toEqual([...(now.strategy?.phaseRuns ?? [])].sort());

    const past = await stack.granule(['runs', 'show', 'seed-ok', '--at', String(events.length + 1)]);
    expect(past.code).toBe(1);
    expect(past.stderr.trim()).toBe(
      `error: run seed-ok has ${events.length} events: --at takes 1 to ${events.length}, got ${events.length + 1}`,
    );
    // Far past any run's end: the same answer, not the database's range error.
    const far = await stack.granule(['runs', 'show', 'seed-ok', '--at', '99999999999999999999']);
    expect([far.code, far.stderr.trim()]).toEqual([
      1,
      `error: run seed-ok has ${events.length} events: --at takes 1 to ${events.length}, got 100000000000000000000`,
    ]);
  }, 60_000);

  it('ntp-node prepare fails: its dependants fail without running, monitoring still deploys, the run fails', async () => {
    const { code, summary, simulated } = await deploy('seed-ntp', { prepare: ['ntp01'] });
    expect(code).toBe(1);
    expect(summary.strategy?.outcome).toBe('failed');
    expect(statuses(summary)).toEqual(
      Object.fromEntries(Object.entries(simulated.groups).map(([g, v]) => [g, v.status])),
    );
    expect(nodeStatus(summary)).toEqual(simulated.nodes);
    const ledger = stack.ledger().filter((l) => l.startsWith('seed-ntp-'));
    expect(ledger.some((l) => /@(ctl|cmp)/.test(l))).toBe(false);
    expect(ledger.filter((l) => l.endsWith('deploy-node@mon01'))).toHaveLength(1);
  }, 240_000);

  it('exports a phase run graph coloured by outcome, and names the phase runs of a strategy run', async () => {
    const dot = await stack.granule(['graph', '--run', 'seed-ntp-1-prepare', '-o', 'dot']);
    expect(dot.code).toBe(0);
    // The first phase prepared the monitoring nodes: green boxes.
    expect(dot.stdout).toContain('"prepare-node@mon01" [label="prepare-node", color=darkgreen, fontcolor=darkgreen];');
    const failedPhase = await stack.granule(['graph', '--run', 'seed-ntp-3-prepare', '-o', 'mermaid']);
    expect(failedPhase.stdout).toContain('["prepare-node@ntp01"]:::failed');
    const parent = await stack.granule(['graph', '--run', 'seed-ntp', '-o', 'dot']);
    expect(parent.code).toBe(1);
    expect(parent.stderr).toMatch(
      /^error: run seed-ntp is a strategy run; each phase run has a graph: seed-ntp-1-prepare, seed-ntp-2-deploy, seed-ntp-3-prepare\n$/,
    );
  }, 60_000);

  it('compute-nodes-2 deploy fails: success with some groups failed (partial), exit 0', async () => {
    const { code, summary, simulated } = await deploy('seed-cmp2', { deploy: ['cmp201', 'cmp202'] });
    expect(summary.strategy?.outcome).toBe('partial');
    expect(code).toBe(0);
    expect(statuses(summary)).toEqual(
      Object.fromEntries(Object.entries(simulated.groups).map(([g, v]) => [g, v.status])),
    );
    expect(statuses(summary)['compute-nodes-2']).toBe('FAILED');
    expect(nodeStatus(summary)).toEqual(simulated.nodes);
  }, 240_000);

  it('stop and resume a strategy run: its phase run stops gracefully, the run ends stopped, and a resume deploys the rest, every node once', async () => {
    for (const uid of UIDS) {
      stack.setFailing(`prepare-node@${uid}`, false);
      stack.setFailing(`deploy-node@${uid}`, false);
    }
    stack.setSlow('prepare-node@mon01', 3);
    try {
      const started = await stack.granule([
        'deploy',
        '--tasks',
        TASKS,
        '--nodes',
        NODES,
        '--strategy',
        STRATEGY,
        '--run-id',
        'seed-stop',
      ]);
      stack.assertExitedOk(started, 'granule deploy seed-stop');
      stack.assertExitedOk(await stack.granule(['stop', 'seed-stop']), 'granule stop seed-stop');
      const stopped = await stack.waitForEnd('seed-stop');
      expect(stopped.map((e) => e.type)).toEqual([
        'DeploymentRequested',
        'StrategyAccepted',
        'StrategyPhaseStarted',
        'DeploymentStopRequested',
        'DeploymentStopped',
      ]);
      // The phase run let its running task finish and ended stopped; nothing after it started.
      expect((await stack.events('seed-stop-1-prepare')).at(-1)?.type).toBe('DeploymentStopped');
      expect(
        stack
          .ledger()
          .filter((l) => l.startsWith('seed-stop-'))
          .sort(),
      ).toEqual(['seed-stop-1-prepare prepare-node@mon01', 'seed-stop-1-prepare prepare-node@mon02']);
      const shown = JSON.parse((await stack.granule(['runs', 'show', 'seed-stop', '-o', 'json'])).stdout) as RunSummary;
      expect([shown.phase, shown.reason]).toEqual(['stopped', 'stopped by the operator']);
      const again = await stack.granule(['stop', 'seed-stop']);
      expect([again.code, again.stderr]).toEqual([
        1,
        'error: run seed-stop has ended (DeploymentStopped): there is nothing to stop\n',
      ]);
    } finally {
      stack.setSlow('prepare-node@mon01', 0);
    }

    stack.assertExitedOk(await stack.granule(['resume', 'seed-stop']), 'granule resume seed-stop');
    const events = await stack.waitForEnd('seed-stop', 180_000);
    expect(events.at(-1)?.type).toBe('DeploymentSucceeded');
    expect(events.map((e) => e.type).slice(5, 7)).toEqual(['DeploymentResumed', 'StrategyPhaseFinished']);
    const ledger = stack.ledger().filter((l) => l.startsWith('seed-stop-'));
    for (const uid of UIDS) {
      expect(ledger.filter((l) => l.endsWith(` prepare-node@${uid}`))).toHaveLength(1);
      expect(ledger.filter((l) => l.endsWith(` deploy-node@${uid}`))).toHaveLength(1);
    }
  }, 240_000);
});
