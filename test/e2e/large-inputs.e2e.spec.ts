import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dataOf, E2eStack, keysOf } from './stack';

// Inline inputs larger than NATS' max_payload (64 KiB on this stack's own NATS): the CLI stores
// them in the inputs object store and the command names them (ADR 0029); graph-planner plans
// them from there, and a strategy run's phase runs too.
const MAX_PAYLOAD = 65_536;
const UIDS = ['1', '2'];
const TASKS = 40;
/** Each task's command carries a comment this long: 40 tasks are about 90 KiB as JSON. */
const PADDING = 2000;

function writeInputs(dir: string): { tasks: string; nodes: string; strategy: string } {
  const tasks = path.join(dir, 'large-tasks');
  mkdirSync(tasks, { recursive: true });
  const step = (id: string, requires: string): string =>
    [
      `- id: ${id}`,
      '  type: shell',
      '  version: 2.0.0',
      "  roles: ['*']",
      `  requires: [${requires}]`,
      '  required_for: [deploy_end]',
      '  parameters:',
      `    cmd: 'echo "$GRANULE_RUN_ID $GRANULE_TASK_ID@$GRANULE_NODE_UID" >> "$GRANULE_E2E_LEDGER" # ${'x'.repeat(PADDING)}'`,
      '    timeout: 30',
      '    retries: 0',
    ].join('\n');
  const steps = Array.from({ length: TASKS }, (_, i) => step(`s${i + 1}`, i === 0 ? 'deploy_start' : `s${i}`));
  writeFileSync(path.join(tasks, 'deployment_graph.yaml'), `${steps.join('\n\n')}\n`);
  writeFileSync(path.join(tasks, 'provisioning_graph.yaml'), `${step('prepare', 'deploy_start')}\n`);
  const nodes = path.join(dir, 'large-nodes.yaml');
  writeFileSync(
    nodes,
    `nodes:\n${UIDS.map((u) => `  - {uid: '${u}', name: n-${u}, roles: [worker], tags: [t${u}]}`).join('\n')}\n`,
  );
  const strategy = path.join(dir, 'large-strategy.yaml');
  const group = (u: string, dependsOn: string[]): string =>
    [
      `    - name: g${u}`,
      '      critical: true',
      `      depends_on: [${dependsOn.join(', ')}]`,
      '      selectors:',
      `        - {node_names: [], node_labels: [], node_tags: [t${u}], rack_names: []}`,
      '      success_criteria:',
      '        percent_successful_nodes: 100',
    ].join('\n');
  writeFileSync(
    strategy,
    [
      '---',
      'schema: shipyard/DeploymentStrategy/v1',
      'metadata:',
      '  schema: metadata/Document/v1',
      '  name: large-inputs',
      '  layeringDefinition: {abstract: false, layer: global}',
      '  storagePolicy: cleartext',
      'data:',
      '  groups:',
      group('1', []),
      group('2', ['g1']),
      '',
    ].join('\n'),
  );
  return { tasks, nodes, strategy };
}

describe('deployments whose inline inputs are larger than NATS max_payload (whole stack)', () => {
  let stack: E2eStack;
  let inputs: ReturnType<typeof writeInputs>;
  const everyStep = Array.from({ length: TASKS }, (_, i) => `s${i + 1}`);

  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'large_inputs', agents: UIDS, natsSettings: [`max_payload: ${MAX_PAYLOAD}`] });
    inputs = writeInputs(stack.dir);
  }, 90_000);
  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  it('a deploy over max_payload runs: the inputs are stored, named in the command, and every task runs once on every node', async () => {
    expect((await stack.natsConnection()).info?.max_payload).toBe(MAX_PAYLOAD);
    const r = await stack.granule(
      ['deploy', '--tasks', inputs.tasks, '--nodes', inputs.nodes, '--run-id', 'large', '--watch'],
      { timeoutMs: 120_000 },
    );
    stack.assertExitedOk(r, 'granule deploy large');
    expect(r.stdout.split('\n')[0]).toBe('RECAP run large: succeeded');
    const events = await stack.events('large');
    const requested = dataOf(events[0], 'DeploymentRequested');
    expect(requested.inputs?.name).toMatch(/^[0-9a-f]{64}$/);
    expect(requested.inputs?.size).toBeGreaterThan(MAX_PAYLOAD);
    expect(events.at(-1)?.type).toBe('DeploymentSucceeded');
    const expected = UIDS.flatMap((u) => everyStep.map((s) => `${s}@${u}`)).sort();
    expect(keysOf(events, 'TaskSucceeded').sort()).toEqual(expected);
    expect(stack.ledger('large').sort()).toEqual(expected);
  }, 150_000);

  it('a deploy that fits is sent inline as before (nothing stored)', async () => {
    const small = path.join(stack.dir, 'small-tasks.yaml');
    writeFileSync(small, "- {id: one, type: shell, version: 2.0.0, roles: ['*'], parameters: {cmd: 'true'}}\n");
    const r = await stack.granule([
      'deploy',
      '--tasks',
      small,
      '--nodes',
      inputs.nodes,
      '--run-id',
      'small',
      '--dry-run',
    ]);
    stack.assertExitedOk(r, 'granule deploy small');
    const events = await stack.waitForEnd('small');
    expect(dataOf(events[0], 'DeploymentRequested').inputs).toBeUndefined();
    expect(events.at(-1)?.type).toBe('DeploymentSucceeded');
  }, 60_000);

  it('a strategy deploy over max_payload runs group by group: the strategy run keeps the reference and each phase run plans from it', async () => {
    const r = await stack.granule(
      [
        'deploy',
        '--tasks',
        inputs.tasks,
        '--nodes',
        inputs.nodes,
        '--strategy',
        inputs.strategy,
        '--run-id',
        'large-strategy',
        '--watch',
      ],
      { timeoutMs: 150_000 },
    );
    stack.assertExitedOk(r, 'granule deploy large-strategy');
    const events = await stack.events('large-strategy');
    expect(events.at(-1)?.type).toBe('DeploymentSucceeded');
    const accepted = events.find((e) => e.type === 'StrategyAccepted');
    const stored = dataOf(events[0], 'DeploymentRequested').inputs;
    expect(stored?.size).toBeGreaterThan(MAX_PAYLOAD);
    expect(accepted?.data).toEqual({ plan: expect.anything(), inputs: stored });
    const phases = [
      'large-strategy-1-prepare',
      'large-strategy-2-deploy',
      'large-strategy-3-prepare',
      'large-strategy-4-deploy',
    ];
    for (const phase of phases) {
      const phaseEvents = await stack.events(phase);
      expect([phase, dataOf(phaseEvents[0], 'DeploymentRequested').inputs, phaseEvents.at(-1)?.type]).toEqual([
        phase,
        stored,
        'DeploymentSucceeded',
      ]);
    }
    expect(stack.ledger('large-strategy-4-deploy').sort()).toEqual(everyStep.map((s) => `${s}@2`).sort());
  }, 180_000);
});
