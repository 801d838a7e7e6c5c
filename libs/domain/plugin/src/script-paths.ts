import { posix } from 'node:path';
import type { TaskDefinition } from '@granule/task-model';

const isAbsolute = (p: string): boolean => p.startsWith('/');
const isRemote = (p: string): boolean => /^[a-z]+:\/\//i.test(p) || /^[^/]*::/.test(p) || /^[^/]+:[^/]/.test(p);

/**
 * Anchors a plugin's relative script paths at its deployment scripts folder, as Fuel did with
 * /etc/fuel/plugins/<name>/: shell tasks run there unless they set `cwd`; puppet manifests and
 * module paths, sync sources and copy_files sources that are relative are taken from there.
 * Nodes must see that folder at the same absolute path (a shared or synced directory; local
 * agents share the host's). Destinations are left alone (agents resolve them under their root).
 */
export function anchorScriptPaths(tasks: TaskDefinition[], scriptsDir: string): TaskDefinition[] {
  const at = (p: unknown): unknown =>
    typeof p === 'string' && p !== '' && !isAbsolute(p) && !isRemote(p)
      ? posix.join(scriptsDir, p).replace(/\/?$/, p.endsWith('/') ? '/' : '')
      : p;
  return tasks.map((task) => {
    const params = { ...task.parameters };
    switch (task.type) {
      case 'shell':
        params.cwd = params.cwd === undefined ? scriptsDir : at(params.cwd);
        break;
      case 'puppet':
        params.puppet_manifest = at(params.puppet_manifest);
        if (typeof params.puppet_modules === 'string')
          params.puppet_modules = params.puppet_modules.split(':').map(at).join(':');
        if (params.cwd === undefined) params.cwd = scriptsDir;
        break;
      case 'sync':
        params.src = at(params.src);
        break;
      case 'copy_files':
        if (Array.isArray(params.files))
          params.files = params.files.map((f) =>
            typeof f === 'object' && f !== null ? { ...f, src: at((f as { src?: unknown }).src) } : f,
          );
        break;
      default:
        return task;
    }
    return { ...task, parameters: params };
  });
}
