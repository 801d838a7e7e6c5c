// Compiles the src/ folder of every project (apps/*, libs/contracts, libs/<layer>/*; tests excluded) to dist/ with swc (plain .cjs scripts are copied), keeping the tree
// layout so relative imports and rewritten @granule/* aliases resolve at run time.
import { transformFile } from '@swc/core';
import { copyFile, mkdir, readdir, rename, writeFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { buildNative } from './build-native.mjs';

const require = createRequire(import.meta.url);
const { root, swcOptions } = require('./swc-options.cjs');
const dist = path.join(root, 'dist');
// Build beside dist/ and swap it in, so processes running from dist/ never see it half-written.
const out = path.join(root, `.dist-build-${process.pid}`);

async function walk(dir) {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const files = [];
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await walk(full)));
    else if (
      entry.name.endsWith('.ts') &&
      !full.includes('__fixtures__') &&
      !entry.name.endsWith('.spec.ts') &&
      !entry.name.endsWith('.d.ts')
    )
      files.push(full);
    else if (entry.name.endsWith('.cjs') && !full.includes('__fixtures__')) files.push(full); // plain scripts, copied as they are
  }
  return files;
}

// A project is a folder with a project.json: apps/<app>, libs/contracts, libs/<layer>/<lib>.
async function projectDirs(dir, depth) {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  if (entries.some((e) => e.name === 'project.json')) return [dir];
  if (depth === 0) return [];
  const nested = await Promise.all(
    entries.filter((e) => e.isDirectory()).map((e) => projectDirs(path.join(dir, e.name), depth - 1)),
  );
  return nested.flat();
}

const sources = [];
for (const top of ['apps', 'libs']) {
  for (const project of await projectDirs(path.join(root, top), 2)) {
    sources.push(...(await walk(path.join(project, 'src'))));
  }
}

await rm(out, { recursive: true, force: true });
const options = swcOptions();
await Promise.all(
  sources.map(async (file) => {
    const rel = path.relative(root, file);
    if (file.endsWith('.cjs')) {
      await mkdir(path.dirname(path.join(out, rel)), { recursive: true });
      await copyFile(file, path.join(out, rel));
      return;
    }
    const target = path.join(out, rel.replace(/\.ts$/, '.js'));
    const result = await transformFile(file, {
      ...options,
      filename: file,
      sourceFileName: path.relative(path.dirname(target), file),
    });
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, `${result.code}\n//# sourceMappingURL=${path.basename(target)}.map\n`);
    if (result.map) await writeFile(`${target}.map`, result.map);
  }),
);
// The node-agent's native spawn helper, beside the compiled task-runners lib (ADR 0009).
buildNative(out);
await writeFile(path.join(out, '.stamp'), new Date().toISOString());
const old = path.join(root, `.dist-old-${process.pid}`);
await rename(dist, old).catch(() => undefined);
await rename(out, dist);
await rm(old, { recursive: true, force: true });
