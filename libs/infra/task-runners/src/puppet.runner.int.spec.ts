import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { puppetApplyArgs } from './puppet.runner';
import { createTempAgent, type TempAgent } from './testing/temp-agent.fixture';

// Real `puppet apply` (tools/setup.sh installs it); each run takes a few seconds.
jest.setTimeout(120_000);

let agent: TempAgent;
beforeAll(async () => {
  agent = await createTempAgent();
  const moduleDir = path.join(agent.rootDir, 'puppet', 'modules', 'greet', 'manifests');
  await mkdir(moduleDir, { recursive: true });
  await writeFile(
    path.join(moduleDir, 'init.pp'),
    `class greet($target) {\n  file { $target: ensure => file, content => "hello from puppet\\n", mode => '0640' }\n}\n`,
  );
  await writeFile(
    path.join(agent.rootDir, 'puppet', 'site.pp'),
    `class { 'greet': target => '${agent.allowed}/greeting.txt' }\n`,
  );
  await writeFile(
    path.join(agent.rootDir, 'puppet', 'noop.pp'),
    `file { '${agent.allowed}/noop.txt': content => "x\\n" }\n`,
  );
  await writeFile(
    path.join(agent.rootDir, 'puppet', 'failing.pp'),
    `exec { 'always-fails': command => '/bin/false' }\n`,
  );
});
afterAll(() => agent.cleanup());

describe('puppet task', () => {
  it('applies a manifest with modules (exit 2 = changes), then finds nothing to do (exit 0)', async () => {
    const params = { puppet_manifest: 'site.pp', puppet_modules: 'modules', cwd: 'puppet' };
    const first = await agent.run('puppet', params);
    expect(first.outcome).toMatchObject({ status: 'succeeded', exitCode: 2, attempts: 1 });
    expect(await readFile(path.join(agent.allowed, 'greeting.txt'), 'utf8')).toBe('hello from puppet\n');
    expect(first.stdout).toContain('/Stage[main]/Greet/File[');

    const second = await agent.run('puppet', params);
    expect(second.outcome).toMatchObject({ status: 'succeeded', exitCode: 0 });
    expect(second.stdout).not.toContain('/Stage[main]/Greet/File[');
    // State lives under the agent's root, per node, so puppet runs unprivileged and agents do not collide.
    expect(existsSync(path.join(agent.rootDir, '.granule', 'puppet', 'node-1', 'var'))).toBe(true);
  });

  it('a manifest with a failing resource fails with detailed exit code 4', async () => {
    const { outcome } = await agent.run('puppet', { puppet_manifest: 'puppet/failing.pp' });
    expect(outcome).toMatchObject({
      status: 'failed',
      exitCode: 4,
      attempts: 1,
      errorCode: 'RUNNER_EXIT_FAILED',
      error: 'puppet apply failed: exit code 4 (some resources failed)',
    });
    expect(outcome.outputTail).toContain('Exec[always-fails]');
  });

  it('noop - runs with --noop: reports the pending change, writes nothing', async () => {
    const { outcome, stdout } = await agent.run('puppet', { puppet_manifest: 'puppet/noop.pp' }, { noop: true });
    // Puppet 7 exits 0 here: noop changes do not count as changes for --detailed-exitcodes.
    expect(outcome).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(stdout).toContain(`File[${agent.allowed}/noop.txt]/ensure: current_value 'absent', should be 'file' (noop)`);
    expect(existsSync(path.join(agent.allowed, 'noop.txt'))).toBe(false);
  });

  it('a missing puppet binary fails without retrying', async () => {
    const { runTask } = await import('./task-runner');
    const outcome = await runTask(
      { runId: 'r', taskId: 't', nodeUid: 'n', type: 'puppet', parameters: { puppet_manifest: 'x.pp', retries: 3 } },
      { ...agent.ctx, puppetBin: 'granule-no-such-puppet' },
    );
    expect(outcome).toMatchObject({ status: 'failed', attempts: 1, errorCode: 'RUNNER_SPAWN_FAILED' });
    expect(outcome.error).toBe('cannot start puppet apply: spawn granule-no-such-puppet ENOENT');
  });
});

describe('puppetApplyArgs', () => {
  it('puts all puppet state under the given home and adds --noop last before the manifest', () => {
    expect(puppetApplyArgs('/m/site.pp', '/m/a:/m/b', '/s', true)).toEqual([
      'apply',
      '--detailed-exitcodes',
      '--color=false',
      '--vardir=/s/var',
      '--confdir=/s/conf',
      '--codedir=/s/code',
      '--logdir=/s/log',
      '--rundir=/s/run',
      '--modulepath=/m/a:/m/b',
      '--noop',
      '/m/site.pp',
    ]);
  });
});
