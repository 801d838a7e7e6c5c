import type { StageName, TaskDefinition } from '@granule/task-model';

/** The standard sync points, in order; each requires the previous one. */
export const STANDARD_STAGE_IDS = [
  'pre_deployment_start',
  'pre_deployment_end',
  'deploy_start',
  'deploy_end',
  'post_deployment_start',
  'post_deployment_end',
] as const;

export const STAGE_BOUNDS: Record<StageName, { start: string; end: string }> = {
  pre_deployment: { start: 'pre_deployment_start', end: 'pre_deployment_end' },
  deployment: { start: 'deploy_start', end: 'deploy_end' },
  post_deployment: { start: 'post_deployment_start', end: 'post_deployment_end' },
};

export const STAGE_ORDER: StageName[] = ['pre_deployment', 'deployment', 'post_deployment'];

/** Adds the standard stage tasks that the input does not define itself. */
export function withStandardStages(tasks: TaskDefinition[]): TaskDefinition[] {
  const defined = new Set(tasks.map((t) => t.id));
  const added: TaskDefinition[] = STANDARD_STAGE_IDS.filter((id) => !defined.has(id)).map((id, index) => ({
    id,
    type: 'stage',
    version: '2.0.0',
    roles: null,
    requires: [],
    requiredFor: [],
    crossDepends: [],
    crossDependedBy: [],
    parameters: {},
    failOnError: true,
    source: { file: '<standard stages>', line: 0, index },
  }));
  return [...added, ...tasks];
}
