import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseSettings } from '../commands/env.command';
import { parseLabels } from '../commands/node.command';
import { cliConfigPath, readCliConfigFile, resolveConnection } from './cli-connection';

describe('resolveConnection', () => {
  const file = { nats_url: 'nats://file:4222', subject_prefix: 'fromfile' };
  const env = { GRANULE_NATS_URL: 'nats://env:4222', GRANULE_SUBJECT_PREFIX: 'fromenv' };

  it('flags beat the environment, which beats the config file, which beats the defaults', () => {
    expect(resolveConnection({ natsUrl: 'nats://flag:4222', subjectPrefix: 'flag' }, env, file)).toEqual({
      natsUrl: 'nats://flag:4222',
      subjectPrefix: 'flag',
    });
    expect(resolveConnection({}, env, file)).toEqual({ natsUrl: 'nats://env:4222', subjectPrefix: 'fromenv' });
    expect(resolveConnection({}, {}, file)).toEqual({ natsUrl: 'nats://file:4222', subjectPrefix: 'fromfile' });
    expect(resolveConnection({}, {}, {})).toEqual({ natsUrl: 'nats://127.0.0.1:4222', subjectPrefix: 'granule' });
  });

  it('the config file is ~/.config/granule/config.yaml, or under XDG_CONFIG_HOME', () => {
    expect(cliConfigPath({ XDG_CONFIG_HOME: '/cfg' })).toBe('/cfg/granule/config.yaml');
    expect(cliConfigPath({})).toBe(path.join(os.homedir(), '.config', 'granule', 'config.yaml'));
  });
});

describe('readCliConfigFile', () => {
  it('reads nats_url; a missing file is no settings; a wrong type names the file and key', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'granule-cli-'));
    try {
      const good = path.join(dir, 'good.yaml');
      const bad = path.join(dir, 'bad.yaml');
      await writeFile(good, 'nats_url: nats://10.0.0.5:4222\n');
      await writeFile(bad, 'nats_url: 4222\n');
      expect(await readCliConfigFile(good)).toEqual({ nats_url: 'nats://10.0.0.5:4222' });
      expect(await readCliConfigFile(path.join(dir, 'none.yaml'))).toEqual({});
      await expect(readCliConfigFile(bad)).rejects.toThrow(`${bad}: nats_url: expected a string, got 4222`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('CLI value parsing', () => {
  it('labels - KEY=VALUE sets, KEY- removes (only where removing is allowed)', () => {
    expect(parseLabels(['zone=a', 'tier=gold=1', 'old-'], true)).toEqual({ zone: 'a', tier: 'gold=1', old: null });
    expect(() => parseLabels(['old-'], false)).toThrow('label old-: expected KEY=VALUE');
  });

  it('settings - values are YAML scalars; a missing = is a usage error', () => {
    expect(parseSettings(['a.b=true', 'n=3', 'x=null', 's=hello world'])).toEqual({
      'a.b': true,
      n: 3,
      x: null,
      s: 'hello world',
    });
    expect(() => parseSettings(['a.b'])).toThrow('--setting a.b: expected PATH=VALUE, e.g. storage.ceph.value=true');
    expect(() => parseSettings(['a.b=1', 'a=2'])).toThrow(
      '--setting a.b and --setting a set the same setting (one is inside the other): give one',
    );
    expect(() => parseSettings(['a=1', 'a.b.c=2'])).toThrow(
      '--setting a and --setting a.b.c set the same setting (one is inside the other): give one',
    );
    expect(() => parseSettings(['x=1', 'x=2'])).toThrow('--setting x is given twice: give it once');
    expect(parseSettings(['ab=1', 'a.b=2', 'a.bc=3'])).toEqual({ ab: 1, 'a.b': 2, 'a.bc': 3 });
  });
});
