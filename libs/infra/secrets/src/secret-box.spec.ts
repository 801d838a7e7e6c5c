import {
  SecretOpener,
  SecretSealer,
  generateSecretsKeyPair,
  secretsKeyProblem,
  secretsPublicKeyProblem,
} from './secret-box';

describe('sealed values', () => {
  const pair = generateSecretsKeyPair();
  const sealer = new SecretSealer(pair.publicKey);
  const opener = new SecretOpener(pair.secretKey);

  it('keygen - a curve seed and its public key', () => {
    expect(pair.secretKey).toMatch(/^SX[A-Z2-7]{56}$/);
    expect(pair.publicKey).toMatch(/^X[A-Z2-7]{55}$/);
    expect(opener.publicKey).toBe(pair.publicKey);
    expect(generateSecretsKeyPair().secretKey).not.toBe(pair.secretKey);
  });

  it('opens what was sealed for its key, any JSON value; the sealed text shows nothing of it', () => {
    for (const value of ['hunter2', 1234, { user: 'u', pass: 'p' }, ['a', 'b'], '']) {
      const sealed = sealer.seal(value);
      expect(Object.keys(sealed)).toEqual(['$sealed']);
      expect(sealed.$sealed).toMatch(/^X[A-Z2-7]{55}\.[A-Za-z0-9+/]+=*$/);
      expect(opener.open(sealed)).toEqual(value);
    }
    expect(JSON.stringify(sealer.seal('hunter2'))).not.toContain('hunter2');
    expect(Buffer.from(sealer.seal('hunter2').$sealed.split('.')[1], 'base64').toString('latin1')).not.toContain(
      'hunter2',
    );
  });

  it('two seals of one value differ (a fresh one-off key each time)', () => {
    expect(sealer.seal('same').$sealed).not.toBe(sealer.seal('same').$sealed);
  });

  it('another key cannot open it, and a changed box does not open', () => {
    const other = new SecretOpener(generateSecretsKeyPair().secretKey);
    const sealed = sealer.seal('hunter2');
    expect(() => other.open(sealed)).toThrow(/does not open with GRANULE_SECRETS_KEY \(public key X[A-Z2-7]+\)/);
    const [from, box] = sealed.$sealed.split('.');
    const bytes = Buffer.from(box, 'base64');
    bytes[bytes.length - 1] ^= 1;
    expect(() => opener.open({ $sealed: `${from}.${bytes.toString('base64')}` })).toThrow(
      expect.objectContaining({ code: 'SECRETS_CANNOT_OPEN' }),
    );
    expect(() => opener.open({ $sealed: 'not a sealed value' })).toThrow(
      expect.objectContaining({ code: 'SECRETS_CANNOT_OPEN' }),
    );
  });

  it('rotation - with the new key first and the old one after, both old and new sealed values open', () => {
    const next = generateSecretsKeyPair();
    const both = new SecretOpener(`${next.secretKey},${pair.secretKey}`);
    expect(both.publicKey).toBe(next.publicKey);
    expect(both.open(sealer.seal('old'))).toBe('old');
    expect(both.open(new SecretSealer(next.publicKey).seal('new'))).toBe('new');
    expect(() => opener.open(new SecretSealer(next.publicKey).seal('new'))).toThrow(/sealed for another key/);
    expect(secretsKeyProblem(`${next.secretKey},nope`)).toBe(
      'key 2 of 2: expected a curve seed (SX..., 58 characters) from granule secrets keygen, got 4 characters',
    );
  });

  it('openTree - opens every sealed value of a tree and says where they were', () => {
    const tree = { cmd: 'x', env: { A: sealer.seal('a1'), B: 'plain' }, list: [sealer.seal(7)] };
    const opened = opener.openTree(tree);
    expect(opened.value).toEqual({ cmd: 'x', env: { A: 'a1', B: 'plain' }, list: [7] });
    expect(opened.paths).toEqual([
      ['env', 'A'],
      ['list', 0],
    ]);
    expect(opener.openTree({ a: 1 }).paths).toEqual([]);
  });

  it('a wrong key is refused naming the variable and what it holds, never the key', () => {
    expect(secretsPublicKeyProblem(pair.publicKey)).toBeUndefined();
    expect(secretsKeyProblem(pair.secretKey)).toBeUndefined();
    expect(secretsPublicKeyProblem(pair.secretKey)).toMatch(/this is the private key/);
    expect(secretsKeyProblem(pair.publicKey)).toMatch(/this is the public key/);
    expect(secretsKeyProblem('nope')).toBe(
      'expected a curve seed (SX..., 58 characters) from granule secrets keygen, got 4 characters',
    );
    // One character changed in the middle: the key's CRC-16 no longer holds.
    const broken = `${pair.secretKey.slice(0, 20)}${pair.secretKey[20] === 'A' ? 'B' : 'A'}${pair.secretKey.slice(21)}`;
    expect(secretsKeyProblem(broken)).toMatch(/fails its checksum/);
    expect(() => new SecretSealer('X123')).toThrow(/^GRANULE_SECRETS_PUBLIC_KEY: expected a curve public key/);
    expect(() => new SecretOpener(broken)).toThrow(/^GRANULE_SECRETS_KEY: .*fails its checksum$/);
  });
});
