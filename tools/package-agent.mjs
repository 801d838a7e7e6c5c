// Builds the installable node-agent package (issue 21, ADR 0027): one .tar.gz holding the agent
// bundled into one JavaScript file, the native spawn helper's source (and a helper prebuilt for
// this machine's architecture), install.sh, uninstall.sh and the systemd unit.
//
//   node tools/package-agent.mjs [--out DIR|FILE.tar.gz]      (what `granule agent package` runs)
//
// Bundles dist/ (built first when a source is newer: swc keeps the decorator metadata Nest's
// dependency injection reads, which esbuild alone cannot emit). Needs a checkout with its dev
// dependencies (esbuild). Prints the package's path on stdout, the figures on stderr.
import { execFileSync } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  constants,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildNative } from './build-native.mjs';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The oldest Node.js major the bundle's syntax targets; install.sh wants MIN_NODE, accepts this one only when asked. */
export const BUNDLE_NODE_MAJOR = 20;
/** The oldest maintained Node.js LTS major (Node 20 reached its end of life in April 2026). */
export const MIN_NODE_MAJOR = 22;

/** `uname -m` of an architecture Node.js names `process.arch`. */
const UNAME_ARCH = {
  x64: 'x86_64',
  arm64: 'aarch64',
  arm: 'armv7l',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
};

/** The files of deploy/node-agent that go into the package as they are. */
const DEPLOY_FILES = [
  ['install.sh', 0o755],
  ['uninstall.sh', 0o755],
  ['granule-agent.service', 0o644],
  ['README.md', 0o644],
];

/**
 * The package a file under node_modules belongs to: its name (`@scope/name` or `name`) and its key
 * in package-lock.json (`node_modules/a/node_modules/b` for a nested copy), or undefined.
 */
export function packageOfPath(file) {
  const m = /node_modules\/(?:(?:@[^/]+\/)?[^/]+\/node_modules\/)*((?:@[^/]+\/)?[^/]+)\//.exec(file);
  return m ? { name: m[1], key: m[0].slice(0, -1) } : undefined;
}

/** `@scope/name/x.js` -> `@scope/name`; `name/x` -> `name`. */
function packageOfImport(spec) {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The package.json of the package that holds `file` (walking up to the node_modules entry). */
function owningPackageJson(file) {
  for (let dir = path.dirname(file); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const pj = path.join(dir, 'package.json');
    if (existsSync(pj)) {
      const json = JSON.parse(readFileSync(pj, 'utf8'));
      if (json.name) return json;
    }
  }
  return undefined;
}

/**
 * An optional peer dependency of the importing package stays out of the bundle when it is not
 * installed or installed only as a dev dependency (Nest's transports for Kafka, MQTT, RabbitMQ
 * and websockets; debug's supports-color): the importer loads it only when asked, or guards the
 * require, as in a production install (npm ci --omit=dev) where it is absent. Anything else that
 * does not resolve fails the build.
 */
function optionalPeersPlugin(leftOut, lock) {
  return {
    name: 'granule-optional-peers',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (args.pluginData === 'probe' || args.path.startsWith('node:')) return undefined;
        const resolved = await build.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: 'probe',
        });
        const name = packageOfImport(args.path);
        const owner = args.importer ? owningPackageJson(args.importer) : undefined;
        if (!owner?.peerDependenciesMeta?.[name]?.optional)
          return resolved.errors.length === 0 ? resolved : { errors: resolved.errors };
        const pkg = resolved.errors.length === 0 ? packageOfPath(resolved.path) : undefined;
        const absent = resolved.errors.length > 0 || (pkg !== undefined && lock.packages[pkg.key]?.dev === true);
        if (!absent) return resolved;
        leftOut.add(`${name} (optional peer of ${owner.name})`);
        return { path: args.path, external: true };
      });
    },
  };
}

/** Node.js too old for the bundle's syntax stops with one line instead of a SyntaxError. */
const VERSION_GUARD = `if (+process.versions.node.split('.')[0] < ${BUNDLE_NODE_MAJOR}) { process.stderr.write('node-agent: Node.js ${MIN_NODE_MAJOR} or later is needed, found ' + process.version + '\\n'); process.exit(1); }`;

/** Which packages went into the bundle, each with its version and bytes, from esbuild's metafile. */
function bundledPackages(metafile, lock) {
  const bytes = new Map();
  for (const [file, input] of Object.entries(metafile.outputs).flatMap(([, o]) => Object.entries(o.inputs))) {
    const pkg = packageOfPath(file);
    if (pkg) bytes.set(pkg.key, { name: pkg.name, bytes: (bytes.get(pkg.key)?.bytes ?? 0) + input.bytesInOutput });
  }
  return [...bytes.entries()]
    .map(([key, { name, bytes: n }]) => {
      const entry = lock.packages[key];
      return { name, version: entry?.version ?? 'unknown', bytes: n, dev: entry === undefined || entry.dev === true };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

function gitCommit() {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: 'pipe' }).trim();
  } catch {
    return undefined;
  }
}

/**
 * Builds the package. `out` is a directory (the file is named
 * `granule-agent-<version>-linux-<arch>.tar.gz` in it) or a path ending in `.tar.gz`.
 * Returns the file and the figures that the manifest also holds.
 */
export async function packageAgent({ out = process.cwd(), log = (m) => process.stderr.write(`${m}\n`) } = {}) {
  let esbuild;
  try {
    esbuild = require('esbuild');
  } catch {
    throw new Error(
      'esbuild is not installed: packaging the agent needs the dev dependencies (npm ci in the checkout)',
    );
  }
  const tar = require('tar');
  execFileSync('bash', [path.join(root, 'tools/ensure-built.sh')], { stdio: ['ignore', 'inherit', 'inherit'] });
  const entry = path.join(root, 'dist/apps/node-agent/src/main.js');
  if (!existsSync(entry)) throw new Error(`no built agent at ${entry}: run npm run build`);
  const { GRANULE_VERSION: version } = require(path.join(root, 'dist/libs/domain/core/src/version.js'));
  const arch = UNAME_ARCH[process.arch] ?? process.arch;

  const file = out.endsWith('.tar.gz')
    ? path.resolve(out)
    : path.join(path.resolve(out), `granule-agent-${version}-linux-${process.arch}.tar.gz`);
  const name = `granule-agent-${version}`;
  // Checked before the build, so a wrong --out costs no bundling.
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    accessSync(path.dirname(file), constants.W_OK);
  } catch (err) {
    throw new Error(`--out ${out}: cannot write the package there: ${OUT_REASONS[err.code] ?? err.message}`);
  }
  const staging = mkdtempSync(path.join(os.tmpdir(), 'granule-agent-package-'));
  try {
    const top = path.join(staging, name);
    mkdirSync(path.join(top, 'app'), { recursive: true });
    mkdirSync(path.join(top, 'native'), { recursive: true });

    const leftOut = new Set();
    const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
    const result = await esbuild.build({
      entryPoints: [entry],
      outfile: path.join(top, 'app/node-agent.js'),
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: `node${BUNDLE_NODE_MAJOR}`,
      // Nest names providers and errors by their class names.
      keepNames: true,
      legalComments: 'external',
      banner: { js: VERSION_GUARD },
      metafile: true,
      logLevel: 'error',
      plugins: [optionalPeersPlugin(leftOut, lock)],
    });
    const packages = bundledPackages(result.metafile, lock);
    const dev = packages.filter((p) => p.dev);
    if (dev.length > 0)
      throw new Error(
        `the agent bundle pulls in dev dependencies: ${dev.map((p) => p.name).join(', ')} (move them to dependencies or stop importing them from the agent)`,
      );

    // The native helper: its source, built by install.sh where the host has a C compiler, and a
    // binary for this architecture (static where the C library allows) for hosts without one.
    copyFileSync(
      path.join(root, 'libs/infra/task-runners/native/granule-spawn.c'),
      path.join(top, 'native/granule-spawn.c'),
    );
    const nativeOut = path.join(staging, 'native-build');
    const built = buildNative(nativeOut, (m) => log(`[build-native] ${m}`));
    let prebuilt = null;
    if (built) {
      mkdirSync(path.join(top, 'native/prebuilt'), { recursive: true });
      prebuilt = `native/prebuilt/granule-spawn-${arch}`;
      copyFileSync(built, path.join(top, prebuilt));
      chmodSync(path.join(top, prebuilt), 0o755);
    }

    for (const [f, mode] of DEPLOY_FILES) {
      copyFileSync(path.join(root, 'deploy/node-agent', f), path.join(top, f));
      chmodSync(path.join(top, f), mode);
    }
    writeFileSync(path.join(top, 'VERSION'), `${version}\n`);
    const bundleBytes = statSync(path.join(top, 'app/node-agent.js')).size;
    const manifest = {
      name: 'granule-agent',
      version,
      commit: gitCommit() ?? null,
      builtAt: new Date().toISOString(),
      node: { minimum: MIN_NODE_MAJOR, endOfLifeAccepted: BUNDLE_NODE_MAJOR },
      entry: 'app/node-agent.js',
      bundleBytes,
      packages: packages.map(({ name: n, version: v, bytes }) => ({ name: n, version: v, bytes })),
      leftOut: [...leftOut].sort(),
      nativeHelper: { source: 'native/granule-spawn.c', prebuilt, arch: prebuilt ? arch : null },
    };
    writeFileSync(path.join(top, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);

    const tmp = `${file}.${process.pid}.tmp`;
    await tar.c({ gzip: true, file: tmp, cwd: staging, portable: true }, [name]);
    execFileSync('mv', ['-f', tmp, file]);
    const packageBytes = statSync(file).size;
    const mb = (n) => `${(n / 1024 / 1024).toFixed(1)} MB`;
    log(
      `agent package ${name}: ${mb(packageBytes)} (node-agent.js ${mb(bundleBytes)} from ${packages.length} production packages; ` +
        `native helper: source${prebuilt ? ` + prebuilt for ${arch}` : ' only (no C compiler here)'})`,
    );
    return {
      file,
      version,
      bundleBytes,
      packageBytes,
      packages: manifest.packages,
      leftOut: manifest.leftOut,
      prebuilt,
    };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Why `--out` cannot take the package, in words (docs/messages.md: no raw system codes). */
const OUT_REASONS = {
  EEXIST: 'a part of the path is a file, not a folder',
  ENOTDIR: 'a part of the path is not a folder',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
};

function parseArgs(argv) {
  const args = { out: process.cwd() };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--out' && argv[i + 1]) args.out = argv[++i];
    else if (argv[i] === '-h' || argv[i] === '--help') {
      process.stdout.write('usage: node tools/package-agent.mjs [--out DIR|FILE.tar.gz]\n');
      process.exit(0);
    } else {
      process.stderr.write(`error: unknown argument '${argv[i]}' (usage: [--out DIR|FILE.tar.gz])\n`);
      process.exit(2);
    }
  }
  return args;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { out } = parseArgs(process.argv.slice(2));
  try {
    const { file } = await packageAgent({ out });
    process.stdout.write(`${file}\n`);
  } catch (err) {
    process.stderr.write(`error: ${err.message}\n`);
    process.exit(1);
  }
}
