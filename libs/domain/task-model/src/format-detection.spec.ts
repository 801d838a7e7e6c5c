import { parseTaskFile } from './task-file-parser';

describe('format detection', () => {
  it('tasks.yaml with ids is read as granular deployment tasks (fuel-library layout)', () => {
    const result = parseTaskFile(
      '- id: netconfig\n  type: shell\n  roles: [controller]\n  parameters: {cmd: "true"}\n',
      'modular/netconfig/tasks.yaml',
    );
    expect(result.diagnostics).toEqual([]);
    expect(result.tasks.map((t) => [t.id, t.generatedId ?? false])).toEqual([['netconfig', false]]);
  });

  it('tasks.yaml without ids is legacy and gets generated ids', () => {
    const result = parseTaskFile(
      '- role: [controller]\n  stage: post_deployment/100\n  type: shell\n  parameters: {cmd: ./deploy.sh}\n',
      'plugin_a/tasks.yaml',
    );
    expect(result.tasks.map((t) => [t.id, t.generatedId])).toEqual([['plugin_a.post_deployment.1', true]]);
  });
});
