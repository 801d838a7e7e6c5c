import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { IDENTIFIER_RULES, isIdentifier } from '@granule/core';

const INSTALL = path.resolve(__dirname, '../../deploy/node-agent/install.sh');
const script = readFileSync(INSTALL, 'utf8');

/** Runs the script's own valid_uid over each line of `uids` in one bash process: 1 accepted, 0 refused. */
function shellAccepts(uids: string[]): boolean[] {
  const lines = script.split('\n').filter((l) => /^(NODE_UID_RE=|valid_uid\(\))/.test(l));
  const out = execFileSync(
    'bash',
    ['-c', `${lines.join('\n')}\nwhile IFS= read -r u; do valid_uid "$u" && echo 1 || echo 0; done`],
    {
      input: uids.map((u) => `${u}\n`).join(''),
      encoding: 'utf8',
    },
  );
  return out
    .trim()
    .split('\n')
    .map((l) => l === '1');
}

describe('install.sh node uid rule - the same as IDENTIFIER_RULES.nodeUid', () => {
  it('the script states the TS pattern and rule word for word', () => {
    expect(/^NODE_UID_RE='(.*)'$/m.exec(script)?.[1]).toBe(IDENTIFIER_RULES.nodeUid.pattern.source);
    expect(/^NODE_UID_RULE="(.*)"$/m.exec(script)?.[1]).toBe(IDENTIFIER_RULES.nodeUid.rule);
  });

  it('bash accepts exactly what the TS rule accepts (generated uids, seed printed on failure)', () => {
    const chars = fc.constantFrom(...'aZ09_-.:*>/@ é'.split(''));
    const samples = fc.sample(
      fc.oneof(fc.string({ unit: chars, maxLength: 70 }), fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,65}$/)),
      {
        numRuns: 300,
        seed: 22,
      },
    );
    const uids = [...new Set(['>', '*', 'web.1', 'a', 'x'.repeat(63), 'x'.repeat(64), ...samples])].filter(
      (u) => !u.includes('\n'),
    );
    const shell = shellAccepts(uids);
    const mismatches = uids.filter((u, i) => shell[i] !== isIdentifier('nodeUid', u));
    expect(mismatches).toEqual([]);
  });

  it('install.sh --node-uid web.1 - exit 2 with the rule, before anything is checked or written', () => {
    let result: { status: number | null; stderr: string } = { status: 0, stderr: '' };
    try {
      execFileSync('bash', [INSTALL, '--dry-run', '--node-uid', 'web.1'], { encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      result = err as { status: number; stderr: string };
    }
    expect([result.status, result.stderr]).toEqual([
      2,
      `install.sh: --node-uid: expected a node uid of ${IDENTIFIER_RULES.nodeUid.rule}, got 'web.1'\n`,
    ]);
  });
});
