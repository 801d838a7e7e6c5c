// The npm registry reachable here serves only this platform's native packages (the darwin and
// win32 builds of @swc/core, nx, ... answer 404), so `npm install` leaves their entries out of
// package-lock.json and `npm ci` then refuses the lock as out of sync. This adds the missing
// optional entries, with the os/cpu their names state, as a full registry would have written
// them. Run it after any `npm install` that changes the lock: `node tools/complete-lockfile.mjs`.
import { readFileSync, writeFileSync } from 'node:fs';

const file = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(file, 'utf8'));
const packages = lock.packages;

const OS = ['darwin', 'linux', 'win32', 'freebsd', 'android', 'openharmony', 'sunos', 'netbsd', 'openbsd', 'aix'];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 's390x', 'riscv64', 'loong64', 'wasm32'];
function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p));
  const cpu = parts.find((p) => CPU.includes(p) || p === 'x64' || p === 'arm64');
  const libc = parts.find(
    (p) => p.startsWith('musl') || p === 'gnu' || p.startsWith('gnueabi') || p === 'glibc' || p === 'msvc',
  );
  return {
    os,
    cpu,
    libc: libc?.startsWith('musl')
      ? 'musl'
      : libc === 'gnu' || libc === 'glibc' || libc?.startsWith('gnueabi')
        ? 'glibc'
        : undefined,
  };
}

let added = 0;
for (const [at, pkg] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const base = at === '' ? 'node_modules' : `${at}/node_modules`;
    // npm resolves from the nearest node_modules upwards; hoisted copies live at the root.
    const wanted = version.replace(/^[\^~=]/, '');
    const nested = `${base}/${name}`;
    if (packages[nested]) continue;
    const hoisted = packages[`node_modules/${name}`];
    if (hoisted && hoisted.version === wanted) continue;
    const where = hoisted ? nested : `node_modules/${name}`;
    const { os, cpu, libc } = platformOf(name);
    const entry = { version: wanted, optional: true };
    if (cpu) entry.cpu = [cpu];
    if (libc) entry.libc = [libc];
    if (os) entry.os = [os];
    packages[where] = entry;
    added++;
  }
}
const sorted = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
lock.packages = sorted;
writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} optional platform entries`);
