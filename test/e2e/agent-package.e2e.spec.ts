import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { extractAgentPackage, installAgentPackage } from './agent-package';
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

describe('agent package installed on a host with no checkout (granule agent package, install.sh --root)', () => {
  let stack: E2eStack;
  let tmp: string;
  let pkg: string;
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
    pkg = extractAgentPackage(file, tmp);

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
    const installed = installAgentPackage(pkg, path.join(tmp, 'host'), {
      nodeUid: UID,
      natsUrl: stack.natsUrl,
      subjectPrefix: stack.prefix,
      creds: await stack.enroll(UID),
    });
    expect(installed.stderr.replace(/^warning: Node.js .* past its end of life.*\n/, '')).toBe('');
    expect(installed.stdout).toContain('task processes will be started by the native spawn helper granule-spawn');
    // The host sees its root as /: the paths agent.env names are under the private root here.
    expect(installed.settings).toEqual({
      GRANULE_NODE_UID: UID,
      GRANULE_NATS_URL: stack.natsUrl,
      GRANULE_SUBJECT_PREFIX: stack.prefix,
      GRANULE_NATS_CREDS: '/etc/granule/agent.creds',
      GRANULE_ROOT: '/var/lib/granule-agent',
    });
    agent = stack.agent(UID, {
      main: installed.main,
      cwd: installed.stateDir,
      env: installed.env({
        GRANULE_HEARTBEAT_SECONDS: '1',
        GRANULE_HEALTH_PORT: '0',
        GRANULE_AGENT_HOSTNAME: 'pkg-host-1',
        // What the fixture's tasks write to.
        GRANULE_E2E_LEDGER: stack.ledgerPath,
        GRANULE_E2E_DIR: stack.dir,
      }),
    });
    await agent.start();
    expect(agent.text).toContain('"spawnHelper":"native"');
    await stack.waitForPresence([UID]);
    const cmdline = readFileSync(`/proc/${agent.pid}/cmdline`, 'utf8').split('\0');
    expect(cmdline[1]).toBe(installed.main);

    const runId = 'pkg-run';
    const deployed = await stack.granule(['deploy', ...DEPLOY, '--run-id', runId, '--watch']);
    stack.assertExitedOk(deployed, 'granule deploy (packaged agent)');
    const events = await stack.waitForEnd(runId);
    expect(events.at(-1)?.type).toBe('DeploymentSucceeded');
    expect(keysOf(events, 'TaskSucceeded').sort()).toEqual([`after@${UID}`, `whoami-helper@${UID}`]);
    expect(stack.ledger(runId)).toEqual([`whoami-helper@${UID}`, `after@${UID}`]);
    // The task's parent is the helper install.sh built into the installed version (node resolves
    // the `current` link to the version's directory).
    expect(readFileSync(path.join(installed.stateDir, 'parent.txt'), 'utf8').trim()).toBe(
      path.join(installed.root, 'opt/granule-agent', installed.version, 'native/build/granule-spawn'),
    );
  }, 120_000);
});
