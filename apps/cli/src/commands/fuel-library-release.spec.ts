import path from 'node:path';
import { buildPlan, planInstances } from '@granule/planner';
import { LocalPackages } from '../inputs/local-packages';
import { loadPlanRequest } from './plan.command';

// examples/fuel-library is a release (metadata.yaml, one default graph reading tasks/*.yaml):
// `granule plan --release` reads it through the release loader, as `release install` does, and
// plans what `--tasks examples/fuel-library/tasks` plans — the graph whose Fuel order
// libs/domain/planner/src/fuel-library-graph.spec.ts asserts.
const DIR = path.resolve(__dirname, '../../../../examples/fuel-library');
const NODES = path.join(DIR, 'nodes.yaml');

describe('plan --release examples/fuel-library', () => {
  const packages = new LocalPackages();
  afterAll(() => packages.dispose());

  it('plans without a finding, the same instances as --tasks, each task attributed to the release', async () => {
    const release = await loadPlanRequest({ release: DIR, nodes: NODES, output: 'json', graph: 'default' }, packages);
    const tasks = await loadPlanRequest(
      { tasks: [path.join(DIR, 'tasks')], nodes: NODES, output: 'json', graph: 'default' },
      packages,
    );
    expect([release.warnings, tasks.warnings]).toEqual([[], []]);
    const fromRelease = planInstances(buildPlan(release.request));
    const fromTasks = planInstances(buildPlan(tasks.request));
    expect(fromRelease.length).toBeGreaterThan(100);
    // The release's tasks carry its name (the planner's own sync points, such as a group's start, do not).
    expect(new Set(fromRelease.filter((i) => i.type === 'shell').map((i) => i.plugin))).toEqual(
      new Set(['fuel-library']),
    );
    expect(fromRelease.map(({ plugin: _plugin, ...i }) => i)).toEqual(fromTasks);
    // Fuel's stage binding holds through the release loader too.
    const clear = fromRelease.find((i) => i.task === 'clear_nodes_info' && i.node === 'node-1');
    expect(clear?.stage).toBe('pre_deployment');
  });
});
