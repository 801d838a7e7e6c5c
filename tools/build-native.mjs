// Builds the node-agent's native spawn helper (libs/infra/task-runners/native/granule-spawn.c, ADR 0009).
//
//   node tools/build-native.mjs [OUT_ROOT]
//
// Writes <OUT_ROOT>/libs/infra/task-runners/native/build/granule-spawn (OUT_ROOT defaults to the
// repository, for tests run from the sources; tools/build.mjs passes its dist/ tree). Linked
// statically where the C library allows it, so a build runs on hosts with an older one.
// Without a C compiler it says so and exits 0: the agent then starts tasks with Node.js's child_process.
// Skips the compile when the binary is newer than its source.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const source = path.join(root, 'libs/infra/task-runners/native/granule-spawn.c');

function findCompiler() {
  for (const cc of [process.env.CC, 'cc', 'gcc', 'clang'].filter(Boolean)) {
    try {
      execFileSync(cc, ['--version'], { stdio: 'ignore' });
      return cc;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** Returns the binary's path, or undefined when there is no C compiler. Throws when the source does not compile. */
export function buildNative(outRoot = root, log = (m) => process.stderr.write(`[build-native] ${m}\n`)) {
  const target = path.join(outRoot, 'libs/infra/task-runners/native/build/granule-spawn');
  if (existsSync(target) && statSync(target).mtimeMs >= statSync(source).mtimeMs) return target;
  const cc = findCompiler();
  if (!cc) {
    log("no C compiler (cc, gcc or clang): the node-agent will start tasks with Node.js's child_process");
    return undefined;
  }
  mkdirSync(path.dirname(target), { recursive: true });
  const tmp = `${target}.${process.pid}.tmp`;
  const flags = ['-std=gnu99', '-O2', '-Wall', '-Wextra', '-Werror', '-o', tmp, source];
  try {
    try {
      execFileSync(cc, ['-static', ...flags], { stdio: 'pipe' });
    } catch {
      execFileSync(cc, flags, { stdio: 'pipe' }); // no static C library here: link it dynamically
    }
  } catch (err) {
    rmSync(tmp, { force: true });
    throw new Error(
      `cannot compile ${path.relative(root, source)} with ${cc}:\n${err.stderr?.toString() ?? err.message}`,
    );
  }
  renameSync(tmp, target);
  return target;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const built = buildNative(process.argv[2] ? path.resolve(process.argv[2]) : root);
    if (built) process.stderr.write(`[build-native] ${path.relative(process.cwd(), built)}\n`);
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
