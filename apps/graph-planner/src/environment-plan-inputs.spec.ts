import { buildPlan, planInstances } from '@granule/planner';
import { assertNoErrors, parseTaskData } from '@granule/task-model';
import { withPluginSources } from './environment-plan-inputs';

// An environment's merged graph as config-store returns it: plugin Z was enabled before plugin
// A, so its task comes first; both run at pre_deployment/100.
const records = [
  {
    id: 'z-pre',
    type: 'shell',
    version: '2.0.0',
    roles: ['controller'],
    stage: 'pre_deployment/100',
    parameters: { cmd: 'echo z' },
  },
  {
    id: 'a-pre',
    type: 'shell',
    version: '2.0.0',
    roles: ['controller'],
    stage: 'pre_deployment/100',
    parameters: { cmd: 'echo a' },
  },
];
const tasks = assertNoErrors(parseTaskData(records, 'environments/1/default', { format: 'deployment-tasks' }));
const nodes = [{ uid: '1', roles: ['controller'] }];
const order = (ts: typeof tasks): string[] =>
  planInstances(buildPlan({ tasks: ts, nodes }))
    .map((i) => i.task)
    .filter((id) => id.endsWith('-pre'));

describe('withPluginSources', () => {
  it('gives plugin tasks their plugin, so equal stage priorities run in plugin name order (A, then Z)', () => {
    expect(order(tasks)).toEqual(['z-pre', 'a-pre']); // list order: what a lost attribution gives
    const attributed = withPluginSources(tasks, { 'z-pre': 'zeta', 'a-pre': 'alpha' });
    expect(attributed.map((t) => t.source.plugin)).toEqual(['zeta', 'alpha']);
    expect(order(attributed)).toEqual(['a-pre', 'z-pre']);
  });

  it('leaves release tasks and a missing map alone', () => {
    expect(withPluginSources(tasks, { 'a-pre': 'alpha' })[0]).toBe(tasks[0]);
    expect(withPluginSources(tasks)).toEqual(tasks);
  });
});
