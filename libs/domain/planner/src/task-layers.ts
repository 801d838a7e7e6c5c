import type { Diagnostic } from '@granule/core';
import type { TaskDefinition } from '@granule/task-model';

export interface PluginTasks {
  name: string;
  tasks: TaskDefinition[];
}

export interface TaskLayers {
  release: TaskDefinition[];
  plugins?: PluginTasks[];
  /** Per-environment overrides. */
  cluster?: TaskDefinition[];
}

const where = (t: TaskDefinition): string => `${t.source.file}${t.source.line ? `:${t.source.line}` : ''}`;

/**
 * Merges release, plugin and cluster tasks. For one id the cluster's task beats a plugin's,
 * which beats the release's; two plugins defining the same id is an error naming both places.
 * The result keeps release order, then plugins in the given order, then cluster-only tasks;
 * an override takes the place of the task it replaces.
 */
export function mergeTaskLayers(layers: TaskLayers): { tasks: TaskDefinition[]; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const byId = new Map<string, TaskDefinition>();
  const order: string[] = [];
  const put = (task: TaskDefinition): void => {
    if (!byId.has(task.id)) order.push(task.id);
    byId.set(task.id, task);
  };

  for (const task of layers.release) put({ ...task, source: { ...task.source, layer: 'release' } });

  const pluginOwner = new Map<string, TaskDefinition>();
  for (const plugin of layers.plugins ?? []) {
    for (const task of plugin.tasks) {
      const other = pluginOwner.get(task.id);
      if (other && other.source.plugin !== plugin.name) {
        diagnostics.push({
          severity: 'error',
          code: 'PLAN_DUPLICATE_TASK',
          message: `task '${task.id}' is defined by two plugins: '${other.source.plugin}' (${where(other)}) and '${plugin.name}' (${where(task)})`,
          file: task.source.file,
          line: task.source.line || undefined,
          taskId: task.id,
        });
        continue;
      }
      const tagged = { ...task, source: { ...task.source, layer: 'plugin' as const, plugin: plugin.name } };
      pluginOwner.set(task.id, tagged);
      put(tagged);
    }
  }

  for (const task of layers.cluster ?? []) put({ ...task, source: { ...task.source, layer: 'cluster' } });
  return { tasks: order.map((id) => byId.get(id) as TaskDefinition), diagnostics };
}
