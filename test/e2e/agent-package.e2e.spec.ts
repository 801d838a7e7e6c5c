import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { E2eStack, FIXTURES, REPO_ROOT, keysOf, type StackProcess } from './stack';

// Issue 21.3: the agent package works on a host with no checkout of the repository. The built
// CLI packages the agent; the package is extracted under the system's temporary directory (no
// node_modules anywhere above it), installed with install.sh --root into a private root as a
// host would have it, and the installed agent is started from there with the settings
// install.sh wrote. It registers over NATS with its own credential and runs a deploy, starting
// the tasks with the native helper install.sh built.
const DEPLOY = [
  '--tasks',
  path.join(FIXTURES, 'agent-package/tasks.yaml'),
  '--nodes',
  path.join(FIXTURES, 'agent-package/nodes.yaml'),
];
const UID = 'pkg-1';
/** install.sh wants a maintained Node.js LTS (22+); this machine's Node.js 20 is accepted only when told. */
const EOL_FLAG = Number(process.versions.node.split('.')[0]) < 22 ? ['--allow-eol-node'] : [];

/** `KEY=value` lines of an env file (comments and blanks skipped), as systemd's EnvironmentFile reads them. */
function readEnvFile(file: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2];
  }
  return env;
}

describe('agent package installed on a host with no checkout (granule agent package, install.sh --root)', () => {
  let stack: E2eStack;
  let tmp: string;
  let pkg: string;
  let host: string;
  let version: string;
  let agent: StackProcess;

  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'agentpkg', agents: [] });
    tmp = mkdtempSync(path.join(os.tmpdir(), 'granule-agent-host-'));
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }, 60_000);

  it('granule agent package writes one .tar.gz; extracted outside the repository, nothing of the agent resolves there', async () => {
    const built = await stack.granule(['agent', 'package', '--out', tmp], { timeoutMs: 180_000 });
    stack.assertExitedOk(built, 'granule agent package');
    const file = built.stdout.trim();
    expect(readdirSync(tmp)).toEqual([path.basename(file)]);
    expect(built.stderr).toMatch(
      /agent package granule-agent-\S+: [\d.]+ MB \(node-agent\.js [\d.]+ MB from \d+ production packages/,
    );
    expect(spawnSync('tar', ['xzf', file, '-C', tmp]).status).toBe(0);
    pkg = path.join(tmp, readdirSync(tmp).find((n) => !n.endsWith('.tar.gz')) as string);
    version = readFileSync(path.join(pkg, 'VERSION'), 'utf8').trim();

    expect(path.relative(REPO_ROOT, pkg).startsWith('..')).toBe(true);
    for (let dir = pkg; dir !== path.dirname(dir); dir = path.dirname(dir))
      expect([dir, existsSync(path.join(dir, 'node_modules'))]).toEqual([dir, false]);
    const { NODE_PATH: _unset, ...env } = process.env;
    const resolve = spawnSync(process.execPath, ['-e', "require.resolve('@nats-io/transport-node')"], {
      cwd: path.join(pkg, 'app'),
      env,
      encoding: 'utf8',
    });
    expect(resolve.stderr).toContain("Cannot find module '@nats-io/transport-node'");
  }, 200_000);

  it('installed with --root, the agent registers with its credential over NATS and runs a deploy with its native helper', async () => {
    host = path.join(tmp, 'host');
    const creds = await stack.enroll(UID);
    const install = spawnSync(
      'bash',
      [
        path.join(pkg, 'install.sh'),
        '--root',
        host,
        '--node',
        process.execPath,
        '--node-uid',
        UID,
        '--nats-url',
        stack.natsUrl,
        '--subject-prefix',
        stack.prefix,
        '--creds',
        creds,
        ...EOL_FLAG,
      ],
      { cwd: tmp, encoding: 'utf8' },
    );
    expect([install.status, install.stderr.replace(/^warning: Node.js .* past its end of life.*\n/, '')]).toEqual([
      0,
      '',
    ]);
    expect(install.stdout).toContain('task processes will be started by the native spawn helper granule-spawn');

    // The host sees its root as /: the paths agent.env names are under `host` here.
    const settings = readEnvFile(path.join(host, 'etc/granule/agent.env'));
    expect(settings).toEqual({
      GRANULE_NODE_UID: UID,
      GRANULE_NATS_URL: stack.natsUrl,
      GRANULE_SUBJECT_PREFIX: stack.prefix,
      GRANULE_NATS_CREDS: '/etc/granule/agent.creds',
      GRANULE_ROOT: '/var/lib/granule-agent',
    });
    const stateDir = path.join(host, settings.GRANULE_ROOT);
    mkdirSync(stateDir, { recursive: true, mode: 0o700 }); // systemd's StateDirectory= does this on a host
    agent = stack.agent(UID, {
      main: path.join(host, 'opt/granule-agent/current/app/node-agent.js'),
      cwd: stateDir,
      env: {
        PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        ...settings,
        GRANULE_NATS_CREDS: path.join(host, settings.GRANULE_NATS_CREDS),
        GRANULE_ROOT: stateDir,
        GRANULE_HEARTBEAT_SECONDS: '1',
        GRANULE_HEALTH_PORT: '0',
        GRANULE_AGENT_HOSTNAME: 'pkg-host-1',
        // What the fixture's tasks write to.
        GRANULE_E2E_LEDGER: stack.ledgerPath,
        GRANULE_E2E_DIR: stack.dir,
      },
    });
    await agent.start();
    expect(agent.text).toContain('"spawnHelper":"native"');
    await stack.waitForPresence([UID]);
    const cmdline = readFileSync(`/proc/${agent.pid}/cmdline`, 'utf8').split('\0');
    expect(cmdline[1]).toBe(path.join(host, 'opt/granule-agent/current/app/node-agent.js'));

    const runId = 'pkg-run';
    const deployed = await stack.granule(['deploy', ...DEPLOY, '--run-id', runId, '--watch']);
    stack.assertExitedOk(deployed, 'granule deploy (packaged agent)');
    const events = await stack.waitForEnd(runId);
    expect(events.at(-1)?.type).toBe('DeploymentSucceeded');
    expect(keysOf(events, 'TaskSucceeded').sort()).toEqual([`after@${UID}`, `whoami-helper@${UID}`]);
    expect(stack.ledger(runId)).toEqual([`whoami-helper@${UID}`, `after@${UID}`]);
    // The task's parent is the helper install.sh built into the installed version (node resolves
    // the `current` link to the version's directory).
    expect(readFileSync(path.join(stateDir, 'parent.txt'), 'utf8').trim()).toBe(
      path.join(host, 'opt/granule-agent', version, 'native/build/granule-spawn'),
    );
  }, 120_000);
});
