import { stat } from 'node:fs/promises';
import path from 'node:path';

/** The graphs a release folder declares: which of its files each graph's tasks come from. */
export interface ReleaseFolder {
  root: string;
  name: string;
  /** Absolute file path → graph type. */
  graphOf: Map<string, string>;
  /** `type: tasks_path` of each graph, for messages. */
  declared: string[];
}

async function isFile(p: string): Promise<boolean> {
  return (await stat(p).catch(() => undefined))?.isFile() ?? false;
}

/** The nearest folder at or above `dir` that holds a metadata.yaml (or .yml). */
async function metadataFolder(dir: string): Promise<string | undefined> {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    if ((await isFile(path.join(at, 'metadata.yaml'))) || (await isFile(path.join(at, 'metadata.yml')))) return at;
    if (path.dirname(at) === at) return undefined;
  }
}

/**
 * The release folder a task file lies in, when a metadata.yaml above it declares graphs: read
 * with the plugin loader, so `tasks_path` globs and base releases count as they do for
 * `--release`. `undefined` for a file in no release (or in a plugin without graphs).
 */
export async function releaseFolderOf(
  file: string,
  cache: Map<string, Promise<ReleaseFolder | undefined>>,
): Promise<ReleaseFolder | undefined> {
  const root = await metadataFolder(path.dirname(file));
  if (root === undefined) return undefined;
  let pending = cache.get(root);
  if (!pending) {
    pending = readReleaseFolder(root);
    cache.set(root, pending);
  }
  return pending;
}

async function readReleaseFolder(root: string): Promise<ReleaseFolder | undefined> {
  // Loaded only for a task file inside a plugin folder: it pulls in the plugin and tar code.
  const [{ loadPlugin, releaseGraphs }, { NodePluginFiles }] = await Promise.all([
    import('@granule/plugin'),
    import('@granule/plugin-files'),
  ]);
  const plugin = await loadPlugin(new NodePluginFiles(root));
  const graphOf = new Map<string, string>();
  const declared: string[] = [];
  const raw = Array.isArray(plugin.rawMetadata?.releases) ? plugin.rawMetadata.releases : [];
  for (const release of plugin.releases) {
    const rawGraphs = (raw[release.index] as { graphs?: unknown } | undefined)?.graphs;
    for (const g of releaseGraphs(release)) {
      const spec = Array.isArray(rawGraphs) ? (rawGraphs[g.index] as { tasks_path?: unknown } | undefined) : undefined;
      declared.push(`${g.type}: ${typeof spec?.tasks_path === 'string' ? spec.tasks_path : '(inline tasks)'}`);
      const records = Array.isArray(g.records) ? g.records : [];
      for (const record of [g.records, ...records]) {
        const origin = typeof record === 'object' && record !== null ? plugin.ctx.origins.get(record) : undefined;
        // Inline tasks (and a glob's merged list) point at metadata.yaml itself, which holds no graph's file.
        if (!origin || /^metadata\.ya?ml$/.test(origin.file)) continue;
        const file = path.join(root, origin.file);
        if (!graphOf.has(file)) graphOf.set(file, g.type);
      }
    }
  }
  if (declared.length === 0) return undefined;
  const name = typeof plugin.rawMetadata?.name === 'string' ? plugin.rawMetadata.name : path.basename(root);
  return { root, name, graphOf, declared: [...new Set(declared)] };
}
