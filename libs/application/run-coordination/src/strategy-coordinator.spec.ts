import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { PlanReplyMessage, PlanRequestMessage, RunEvent, TaskDispatchMessage } from '@granule/contracts';
import { buildReport, parseStrategyDocument, simulateStrategy } from '@granule/deployment-strategy';
import type { StrategyReport } from '@granule/deployment-strategy';
import { toExecutablePlan } from '@granule/deployment-run';
import type { ExecutablePlan } from '@granule/deployment-run';
import { buildPlan, planInstances } from '@granule/planner';
import { assertNoErrors, parseNodesFile, parseTaskFile } from '@granule/task-model';
import type { TaskDefinition } from '@granule/task-model';
import type { CoordinatorPorts } from './ports';
import { MemoryRunEventLog } from './testing/memory-run-event-log';
import { RunCoordinator } from './run-coordinator';
import { StrategyCoordinator } from './strategy-coordinator';

const root = path.join(__dirname, '..', '..', '..', '..');
const STRATEGY_FILE = path.join(root, 'examples/strategies/deployment-strategy.yaml');
const NODES_FILE = path.join(root, 'examples/strategies/nodes.yaml');
const strategyDoc = parseStrategyDocument(readFileSync(STRATEGY_FILE, 'utf8'), STRATEGY_FILE);
const nodes = parseNodesFile(readFileSync(NODES_FILE, 'utf8'), NODES_FILE).nodes;

const graphs: Record<string, TaskDefinition[]> = {
  provisioning: assertNoErrors(
    parseTaskFile("- {id: image, type: shell, roles: '*', parameters: {cmd: image}}", 'provisioning_graph.yaml'),
  ),
  default: assertNoErrors(
    parseTaskFile("- {id: configure, type: shell, roles: '*', parameters: {cmd: configure}}", 'deployment_graph.yaml'),
  ),
};

/** Orchestration in memory with the real planner; agents answer every dispatch, failing the given node/graph pairs. */
function world(
  fail: { prepare?: string[]; deploy?: string[] },
  shared?: { log: MemoryRunEventLog; plans: Map<string, ExecutablePlan> },
) {
  const log = shared?.log ?? new MemoryRunEventLog();
  const plans = shared?.plans ?? new Map<string, ExecutablePlan>();
  const queue: TaskDispatchMessage[] = [];
  /** What the coordinators asked of graph-planner and of the strategy source. */
  const asked: { plans: PlanRequestMessage[]; strategies: unknown[] } = { plans: [], strategies: [] };
  const ports: CoordinatorPorts = {
    log,
    locks: log.lockLog,
    plans: {
      request: async (req: PlanRequestMessage): Promise<PlanReplyMessage> => {
        asked.plans.push(req);
        const tasks = graphs[req.graph];
        if (!tasks)
          return { ok: false, error: { code: 'PLAN_UNKNOWN_GRAPH', message: `graph ${req.graph}: no such graph` } };
        const built = buildPlan({ tasks, nodes, filters: req.filters as { nodes?: string[] } });
        const id = `plan-${plans.size + 1}`;
        plans.set(
          id,
          toExecutablePlan({ instances: planInstances(built), groups: built.groups, concurrency: built.concurrency }),
        );
        return { ok: true, result: { planId: id, planHash: id, instances: 0, tasks: 0, nodes: [] } };
      },
      load: async (id) => plans.get(id) as ExecutablePlan,
    },
    dispatcher: { dispatch: async (m) => void queue.push(m) },
    presence: { offline: async () => [] },
    lease: { acquire: async () => true, renew: async () => true, release: async () => undefined },
    clock: { now: () => new Date('2026-01-01T00:00:00Z') },
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
  };
  const runs = new RunCoordinator(ports, { limits: { maxBusyNodes: 100 } });
  const strategies = new StrategyCoordinator(
    ports,
    {
      resolve: async (_ref, request) => {
        asked.strategies.push(request);
        return { strategy: strategyDoc.strategy as never, nodes };
      },
    },
    runs,
  );
  runs.onRunEnded = (id, outcome) => void strategies.childEnded(id, outcome);
  const drain = async (): Promise<void> => {
    for (let guard = 0; guard < 1000; guard++) {
      // Phase runs are planned in their own queues: let that finish before taking the queue as empty.
      if (queue.length === 0) await new Promise((resolve) => setImmediate(resolve));
      const m = queue.shift();
      if (!m) {
        await strategies.tick();
        await new Promise((resolve) => setImmediate(resolve));
        if (queue.length === 0) return;
        continue;
      }
      const failing = m.task === 'image' ? fail.prepare : fail.deploy;
      await runs.progress({
        runId: m.runId,
        key: m.key,
        node: m.node,
        attempt: m.attempt,
        dispatchId: m.dispatchId,
        status: failing?.includes(m.node) ? 'failed' : 'succeeded',
        at: '2026-01-01T00:00:01Z',
      });
    }
  };
  return { log, plans, runs, strategies, drain, queue, asked, ports };
}

const start = {
  commandId: 'c',
  runId: 's1',
  graph: 'default',
  dryRun: false,
  noop: false,
  strategy: { name: 'deployment-strategy' },
  inline: { graphs: {}, nodes: [] },
};

async function outcomeOf(fail: {
  prepare?: string[];
  deploy?: string[];
}): Promise<{ events: RunEvent[]; report: StrategyReport }> {
  const w = world(fail);
  await w.strategies.start(start);
  await w.drain();
  const events = await w.log.read('s1');
  const reported = events.find((e) => e.type === 'StrategyReported');
  if (reported?.type !== 'StrategyReported') throw new Error(`no report: ${events.map((e) => e.type).join(', ')}`);
  return { events, report: reported.data.report };
}

describe('StrategyCoordinator - a check (ADR 0031)', () => {
  it('every phase run of a strategy check is a check: recorded so, its dispatches checks, no node status', async () => {
    const w = world({});
    const dispatched: TaskDispatchMessage[] = [];
    const shift = w.queue.shift.bind(w.queue);
    w.queue.shift = () => {
      const m = shift();
      if (m) dispatched.push(m);
      return m;
    };
    await w.strategies.start({ ...start, check: true });
    await w.drain();
    const events = await w.log.read('s1');
    expect(events.at(-1)?.type).toBe('DeploymentSucceeded');
    const phases = events.flatMap((e) => (e.type === 'StrategyPhaseStarted' ? [e.data.childRunId] : []));
    expect(phases.length).toBeGreaterThan(1);
    for (const id of phases) expect((await w.log.read(id))[0]).toMatchObject({ data: { check: true } });
    expect(dispatched.length).toBeGreaterThan(0);
    expect(dispatched.every((d) => d.check === true && d.noop === true)).toBe(true);
    expect([...w.log.nodeStreams.values()].flat()).toEqual([]);
  });
});

describe('StrategyCoordinator - inline inputs the CLI stored (ADR 0029)', () => {
  it('the strategy run keeps their reference, not the inputs, and every phase run is planned from it', async () => {
    const inputs = { name: 'e'.repeat(64), size: 2_000_000 };
    const { inline: _inline, ...withoutInline } = start;
    const w = world({});
    await w.strategies.start({ ...withoutInline, inputs });
    await w.drain();
    const events = await w.log.read('s1');
    expect(events.at(-1)?.type).toBe('DeploymentSucceeded');
    expect(w.asked.strategies).toEqual([{ envId: undefined, inlineNodes: undefined, inputs }]);
    expect(events.find((e) => e.type === 'StrategyAccepted')?.data).toEqual({ plan: expect.anything(), inputs });
    expect(w.asked.plans.length).toBeGreaterThan(1);
    expect(w.asked.plans.every((r) => r.inputs === inputs && r.inline === undefined && r.envId === undefined)).toBe(
      true,
    );
  });
});

describe('StrategyCoordinator - the seed example on real phase runs', () => {
  const cases: [string, { prepare?: string[]; deploy?: string[] }, string][] = [
    ['everything succeeds', {}, 'DeploymentSucceeded'],
    ['ntp-node prepare fails', { prepare: ['ntp01'] }, 'DeploymentFailed'],
    ['compute-nodes-2 deploy fails', { deploy: ['cmp201', 'cmp202'] }, 'DeploymentSucceeded'],
  ];
  it.each(cases)('%s: the run ends as the what-if simulation says', async (_name, fail, terminal) => {
    const { events, report } = await outcomeOf(fail);
    const expected = buildReport(
      simulateStrategy(strategyDoc.strategy as never, nodes, {
        failPrepare: fail.prepare ?? [],
        failDeploy: fail.deploy ?? [],
      }),
    );
    expect(report.outcome).toBe(expected.outcome);
    expect(report.nodes).toEqual(expected.nodes);
    expect(report.groups).toEqual(expected.groups);
    expect(events.at(-1)?.type).toBe(terminal);
  });

  it('runs each group phase as its own run on the actionable nodes, in group order', async () => {
    const { events } = await outcomeOf({});
    const started = events.flatMap((e) =>
      e.type === 'StrategyPhaseStarted' ? [`${e.data.phase} ${e.data.group} ${e.data.graph}`] : [],
    );
    expect(started).toEqual([
      'prepare monitoring-nodes provisioning',
      'deploy monitoring-nodes default',
      'prepare ntp-node provisioning',
      'deploy ntp-node default',
      'prepare control-nodes provisioning',
      'deploy control-nodes default',
      'prepare compute-nodes-1 provisioning',
      'deploy compute-nodes-1 default',
      'prepare compute-nodes-2 provisioning',
      'deploy compute-nodes-2 default',
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'DeploymentSucceeded', data: { outcome: 'success', failedNodes: [] } });
  });

  it('starts a phase run that was recorded as started but never created (a crash in between)', async () => {
    const w = world({});
    await w.strategies.start(start);
    await w.drain();
    const full = await w.log.read('s1');
    // Keep the parent up to its second StrategyPhaseStarted and drop that phase's run.
    const cut = full.findIndex(
      (e, i) => e.type === 'StrategyPhaseStarted' && full.slice(0, i).some((x) => x.type === 'StrategyPhaseStarted'),
    );
    const again = world({});
    again.log.streams.set('s1-1-prepare', (await w.log.read('s1-1-prepare')) as never);
    again.log.streams.set('s1', full.slice(0, cut + 1));
    for (const [id, plan] of w.plans) again.plans.set(id, plan);
    expect(await again.strategies.recover()).toEqual(['s1']);
    await again.drain();
    expect((await again.log.read('s1-2-deploy'))[0]).toMatchObject({
      type: 'DeploymentRequested',
      data: { childOf: { runId: 's1', phase: 'deploy' } },
    });
    expect((await again.log.read('s1')).at(-1)).toMatchObject({
      type: 'DeploymentSucceeded',
      data: { outcome: 'success' },
    });
  });

  it('continues after a restart from the parent and phase events', async () => {
    const w = world({});
    await w.strategies.start(start);
    // Process a few dispatches, then "crash": a new strategy coordinator over the same log.
    await w.runs.progress({
      runId: 's1-1-prepare',
      key: 'image@mon01',
      node: 'mon01',
      attempt: 1,
      dispatchId: 's1-1-prepare/image@mon01/1',
      status: 'succeeded',
      at: '2026-01-01T00:00:01Z',
    });
    const again = world({}, { log: w.log, plans: w.plans });
    // Each coordinator reads only the streams of the runs it drives: the phase run; the parent
    // (whose advance then looks at its phase run).
    w.log.reads.length = 0;
    expect(await again.runs.recover()).toEqual(['s1-1-prepare']);
    expect(w.log.reads).toEqual(['s1-1-prepare']);
    w.log.reads.length = 0;
    expect(await again.strategies.recover()).toEqual(['s1']);
    expect(w.log.reads[0]).toBe('s1');
    await again.drain();
    const events = await again.log.read('s1');
    expect(events.at(-1)).toMatchObject({ type: 'DeploymentSucceeded', data: { outcome: 'success' } });
    expect(events.filter((e) => e.type === 'StrategyPhaseStarted')).toHaveLength(10);
  });

  it('a recovery pass while a start is being recorded leaves the run to the start: no second copy of it appends', async () => {
    const w = world({});
    const append = w.log.append.bind(w.log);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    w.log.append = async (runId, events, expected, metadata, nodeEvents) => {
      if (runId === 's1' && events[0]?.type === 'StrategyAccepted' && !held) {
        held = true;
        await gate;
      }
      return append(runId, events, expected, metadata, nodeEvents);
    };
    const starting = w.strategies.start(start);
    for (let k = 0; k < 50 && !held; k++) await new Promise((r) => setImmediate(r));
    expect(held).toBe(true);
    // The run is open in the log and this orchestrator holds its lease: the pass must leave it.
    expect(await w.strategies.recover()).toEqual([]);
    release();
    await starting;
    await w.drain();
    const events = await w.log.read('s1');
    expect(
      events.filter((e) => e.type === 'StrategyAccepted' || e.type === 'DeploymentRefused').map((e) => e.type),
    ).toEqual(['StrategyAccepted']);
    expect(events.at(-1)).toMatchObject({ type: 'DeploymentSucceeded', data: { outcome: 'success' } });
  });

  it('an append that meets a newer stream folds the run again from the log: one tick fails, the next goes on', async () => {
    const w = world({});
    await w.strategies.start(start);
    w.runs.onRunEnded = undefined; // only ticks advance the strategy here
    // Someone else appended to the parent stream: memory is one version behind.
    const recorded = await w.log.read('s1');
    await w.log.append('s1', [recorded[recorded.length - 1]], recorded.length);
    await expect(w.drain()).rejects.toThrow(/expected/);
    await w.drain();
    expect((await w.log.read('s1')).at(-1)).toMatchObject({
      type: 'DeploymentSucceeded',
      data: { outcome: 'success' },
    });
  });
});

describe('StrategyCoordinator - stop and resume', () => {
  const types = (events: RunEvent[]): string[] => events.map((e) => e.type);
  /** Lets the first phase run be planned and dispatched. */
  async function firstDispatches(w: ReturnType<typeof world>): Promise<void> {
    for (let k = 0; k < 100 && w.queue.length === 0; k++) await new Promise((r) => setImmediate(r));
    expect(w.queue.length).toBeGreaterThan(0);
  }

  it('a stop lets the phase run finish what runs and ends the strategy run stopped with that phase pending; a resume goes on to the end', async () => {
    const w = world({});
    await w.strategies.start(start);
    await firstDispatches(w);
    await w.strategies.stop('s1');
    await w.drain();
    expect(types(await w.log.read('s1'))).toEqual([
      'DeploymentRequested',
      'StrategyAccepted',
      'StrategyPhaseStarted',
      'DeploymentStopRequested',
      'DeploymentStopped',
    ]);
    expect((await w.log.read('s1-1-prepare')).at(-1)?.type).toBe('DeploymentStopped');
    // Nothing else started.
    expect(await w.log.exists('s1-2-deploy')).toBe(false);
    expect(w.strategies.owned()).toEqual([]);

    await w.strategies.resume('s1');
    await w.drain();
    const events = await w.log.read('s1');
    expect(types(events).slice(5, 7)).toEqual(['DeploymentResumed', 'StrategyPhaseFinished']);
    expect(events.filter((e) => e.type === 'StrategyPhaseStarted')).toHaveLength(10);
    expect(events.at(-1)).toMatchObject({ type: 'DeploymentSucceeded', data: { outcome: 'success' } });
    expect(types(await w.log.read('s1-1-prepare')).slice(-2)).toEqual(['DeploymentResumed', 'DeploymentSucceeded']);
  });

  it('a resume past the window is refused naming it, and leaves the strategy run stopped and driven by nobody', async () => {
    const w = world({});
    await w.strategies.start(start);
    await firstDispatches(w);
    await w.strategies.stop('s1');
    await w.drain();
    w.ports.clock.now = () => new Date('2026-02-01T00:00:00Z');
    let refusal: unknown;
    try {
      await w.strategies.resume('s1');
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toMatchObject({
      code: 'RUN_RESUME_WINDOW_CLOSED',
      message:
        'run s1 was stopped at 2026-01-01T00:00:00.000Z and could be resumed until 2026-01-31T00:00:00.000Z (30 days): its plan is stale and its packages may be gone; start a new deployment',
    });
    expect(w.strategies.owned()).toEqual([]);
    expect(types(await w.log.read('s1')).at(-1)).toBe('DeploymentStopped');
    expect(types(await w.log.read('s1-1-prepare')).at(-1)).toBe('DeploymentStopped');
  });

  it('the operator stopping a phase run stops the strategy run with it', async () => {
    const w = world({});
    await w.strategies.start(start);
    await firstDispatches(w);
    await w.runs.stop('s1-1-prepare');
    await w.drain();
    const events = await w.log.read('s1');
    expect(events.slice(-2)).toEqual([
      { type: 'DeploymentStopRequested', data: { reason: 'operator', detail: 'phase run s1-1-prepare was stopped' } },
      { type: 'DeploymentStopped', data: { at: '2026-01-01T00:00:00.000Z', failedNodes: [] } },
    ]);
  });

  it('stop and resume say why they cannot act on an unknown or ended run', async () => {
    const w = world({});
    await expect(w.strategies.stop('nope')).rejects.toThrow('run nope does not exist');
    await w.strategies.start(start);
    await w.drain();
    await expect(w.strategies.stop('s1')).rejects.toThrow(
      'run s1 has ended (DeploymentSucceeded): there is nothing to stop',
    );
    await expect(w.strategies.resume('s1')).rejects.toThrow(
      'run s1 has ended (DeploymentSucceeded): there is nothing to resume (only a stopped run can be resumed)',
    );
    await expect(w.runs.retry({ commandId: 'r', runId: 's1', newRunId: 's1-again', failedOnly: true })).rejects.toThrow(
      'run s1 is a strategy run: retry its phase runs (s1-1-prepare, s1-2-deploy, s1-3-prepare, s1-4-deploy, s1-5-prepare, s1-6-deploy, s1-7-prepare, s1-8-deploy, s1-9-prepare, s1-10-deploy), or deploy the strategy again',
    );
    expect(await w.strategies.isStrategyRun('s1')).toBe(true);
    expect(await w.strategies.isStrategyRun('s1-1-prepare')).toBe(false);
  });
});

describe('StrategyCoordinator - node locks (ADR 0024)', () => {
  it('each phase run takes its nodes and gives them back before the next starts: a strategy never waits on itself', async () => {
    const w = world({});
    await w.strategies.start(start);
    await w.drain();
    expect((await w.log.read('s1')).at(-1)?.type).toBe('DeploymentSucceeded');
    expect(w.log.lockStreams.size).toBe(nodes.length);
    for (const [uid, stream] of w.log.lockStreams) {
      const types = stream.map((e) => e.type);
      // Prepared, then deployed: two phase runs, each locked and released.
      expect([uid, types]).toEqual([uid, ['NodeLocked', 'NodeReleased', 'NodeLocked', 'NodeReleased']]);
      expect(stream[0].data.runId).not.toBe(stream[2].data.runId);
      expect(stream.every((e) => e.data.runId.startsWith('s1-'))).toBe(true);
    }
  });

  it('a deploy of a node a phase run holds - refused naming the phase run', async () => {
    const w = world({});
    await w.strategies.start(start);
    await new Promise((resolve) => setImmediate(resolve));
    const phase = (await w.log.read('s1')).flatMap((e) => (e.type === 'StrategyPhaseStarted' ? [e.data] : []))[0];
    await w.runs.start({ ...start, strategy: undefined, runId: 'other', commandId: 'c2' });
    const refused = (await w.log.read('other')).at(-1);
    expect(refused).toMatchObject({
      type: 'DeploymentRefused',
      data: { code: 'NODES_LOCKED', reason: expect.stringContaining(`(run ${phase.childRunId})`) },
    });
  });
});
