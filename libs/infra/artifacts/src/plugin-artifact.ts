import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { extractPluginPackage, isPackageFile } from '@granule/plugin-files';
import { packDirectory } from './artifact-pack';
import type { ArtifactInfo, ArtifactStore } from './artifact-store';

const isDir = (p: string): Promise<boolean> =>
  stat(p).then(
    (s) => s.isDirectory(),
    () => false,
  );

/**
 * Packs the `deployment_scripts/` of a plugin folder or `.tar.gz` package (unpacked into a
 * temporary folder first) and stores it in the artifacts bucket, streaming from disk. Returns
 * its digest and size, or undefined when the plugin has no deployment files.
 */
export async function storePluginArtifact(store: ArtifactStore, source: string): Promise<ArtifactInfo | undefined> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'granule-artifact-'));
  try {
    let root = source;
    if (isPackageFile(source)) {
      root = path.join(tmp, 'package');
      await extractPluginPackage(source, root);
    }
    const scripts = path.join(root, 'deployment_scripts');
    if (!(await isDir(scripts))) return undefined;
    const packed = await packDirectory(scripts, path.join(tmp, 'artifact.tar'));
    await store.putFile(packed.file, packed);
    return { digest: packed.digest, size: packed.size };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
