import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { E2eStack, FIXTURES, waitUntil } from './stack';

// One run on four agents, then what operators watch: /metrics of the orchestrator and of an
// agent, and the service logs (JSON lines; task lines name the run, the task and the node).
const CHAIN = ['--tasks', path.join(FIXTURES, 'chain/tasks.yaml'), '--nodes', path.join(FIXTURES, 'chain/nodes.yaml')];
const NODES = ['1', '2', '3', '4'];

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** `name{labels} value` lines of a scrape as a map, without the `service` label. */
async function scrape(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('granule_')) continue;
    const at = line.lastIndexOf(' ');
    series.set(
      line
        .slice(0, at)
        .replace(/service="[^"]*",?/, '')
        .replace(/,}$/, '}')
        .replace('{}', ''),
      Number(line.slice(at + 1)),
    );
  }
  return series;
}

/** A process log's lines that are not the stack's own `--- start` markers. */
function serviceLines(text: string): string[] {
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('--- start '));
}

describe('logs and metrics of a running stack (whole stack)', () => {
  let stack: E2eStack;
  const ports = new Map<string, number>();

  beforeAll(async () => {
    for (const name of ['orchestrator', ...NODES]) ports.set(name, await freePort());
    stack = await E2eStack.start({
      name: 'observability',
      agents: NODES,
      orchestratorEnv: { GRANULE_HEALTH_PORT: String(ports.get('orchestrator')) },
      agentEnv: (uid) => ({ GRANULE_HEALTH_PORT: String(ports.get(uid)) }),
    });
  }, 90_000);

  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  it('a run of 24 tasks - orchestrator and agent /metrics count it; every log line is JSON, task lines carry runId, task and node', async () => {
    stack.assertExitedOk(await stack.granule(['deploy', ...CHAIN, '--run-id', 'obs-run']), 'granule deploy obs-run');
    await stack.waitForEnd('obs-run');

    const orchestrator = await waitUntil(async () => {
      const m = await scrape(ports.get('orchestrator') as number);
      return m.get('granule_runs_ended_total{outcome="succeeded"}') === 1 && m;
    }, 'the orchestrator to count the run as ended');
    expect({
      started: orchestrator.get('granule_runs_started_total'),
      dispatches: orchestrator.get('granule_task_dispatches_total'),
      commands: orchestrator.get('granule_commands_total{command="StartDeployment",outcome="accepted"}'),
      succeededTasks: orchestrator.get('granule_task_runs_total{state="succeeded",type="shell"}'),
      registrations:
        (orchestrator.get('granule_requests_total{transport="nats",route="agent.register",outcome="ok"}') ?? 0) >= 4,
    }).toEqual({ started: 1, dispatches: 24, commands: 1, succeededTasks: 24, registrations: true });

    const agent = await scrape(ports.get('1') as number);
    expect({
      tasks: agent.get('granule_agent_tasks_total{type="shell",outcome="succeeded"}'),
      timed: agent.get('granule_agent_task_duration_seconds_count{type="shell",outcome="succeeded"}'),
      fetches: agent.get('granule_agent_artifact_fetches_total{outcome="fetched"}'),
      runMetrics: [...agent.keys()].some((k) => k.startsWith('granule_runs')),
    }).toEqual({ tasks: 6, timed: 6, fetches: 0, runMetrics: false });

    for (const name of ['orchestrator', 'graph-planner'] as const) {
      const lines = serviceLines(stack.service(name).text);
      expect(lines.filter((l) => !isJsonObject(l))).toEqual([]);
      expect(lines.map((l) => JSON.parse(l).service as string).filter((s) => s !== name)).toEqual([]);
    }
    const agentLines = serviceLines(stack.agent('1').text);
    expect(agentLines.filter((l) => !isJsonObject(l))).toEqual([]);
    const taskLines = agentLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r['msg'] === 'task started' || r['msg'] === 'task succeeded');
    expect(taskLines).toHaveLength(12);
    expect(
      taskLines.filter((r) => r['runId'] !== 'obs-run' || r['node'] !== '1' || !/^step[1-6]$/.test(String(r['task']))),
    ).toEqual([]);
  }, 120_000);
});

function isJsonObject(line: string): boolean {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}
