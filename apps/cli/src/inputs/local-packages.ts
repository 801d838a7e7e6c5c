import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { PackedArtifact, ArtifactStore } from '@granule/artifacts';
import type { PackageRef } from '@granule/plugin';

/**
 * The packages of the plugin and release folders (or `.tar.gz`) a `plan` or `deploy` names:
 * each one's `deployment_scripts/` packed once into a temporary tar, so its tasks can name it
 * by digest (`$package`, ADR 0026) as those of an installed plugin do. `deploy` stores them in
 * the artifacts bucket before it sends the command; `plan` only shows the digest.
 */
export class LocalPackages {
  private dir?: Promise<string>;
  private readonly bySource = new Map<string, Promise<PackageRef | undefined>>();
  private readonly packed: PackedArtifact[] = [];
  private count = 0;

  /** The package of a plugin source: its name, version and digest; undefined when it has no deployment files. */
  refOf(source: string, name: string): Promise<PackageRef | undefined> {
    const key = path.resolve(source);
    let ref = this.bySource.get(key);
    if (!ref) {
      ref = this.pack(source, name);
      this.bySource.set(key, ref);
    }
    return ref;
  }

  private async pack(source: string, name: string): Promise<PackageRef | undefined> {
    const n = this.count++;
    const { extractPluginPackage, isPackageFile, openPluginSource } = await import('@granule/plugin-files');
    const { packDirectory } = await import('@granule/artifacts');
    const { loadPlugin } = await import('@granule/plugin');
    this.dir ??= mkdtemp(path.join(os.tmpdir(), 'granule-packages-'));
    const tmp = await this.dir;
    let root = source;
    if (isPackageFile(source)) {
      root = path.join(tmp, `source-${n}`);
      await extractPluginPackage(source, root);
    }
    const scripts = path.join(root, 'deployment_scripts');
    if (!(await stat(scripts).catch(() => undefined))?.isDirectory()) return undefined;
    const packed = await packDirectory(scripts, path.join(tmp, `package-${n}.tar`));
    this.packed.push(packed);
    const version = (await loadPlugin(await openPluginSource(source))).metadata.version;
    return {
      name,
      version: typeof version === 'string' || typeof version === 'number' ? String(version) : '0.0.0',
      digest: packed.digest,
    };
  }

  /** Stores every package in the artifacts bucket (one already there is not sent again). */
  async storeAll(store: ArtifactStore): Promise<void> {
    await Promise.all([...this.bySource.values()]);
    for (const p of this.packed) await store.putFile(p.file, p);
  }

  /** Removes the temporary tars. */
  async dispose(): Promise<void> {
    if (this.dir) await rm(await this.dir, { recursive: true, force: true });
  }
}
