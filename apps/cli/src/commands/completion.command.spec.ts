import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildProgram } from '../program';
import { completionScript, completionWords } from './completion.command';

/** What bash offers after `line` (the words typed so far, the last one being completed), with the real script. */
function complete(line: string): string[] {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'granule-completion-'));
  try {
    const script = path.join(dir, 'granule.bash');
    writeFileSync(script, completionScript(buildProgram(), 'bash'));
    const words = line.split(' ');
    const probe = [
      `source ${JSON.stringify(script)}`,
      `COMP_WORDS=(${words.map((w) => JSON.stringify(w)).join(' ')})`,
      `COMP_CWORD=${words.length - 1}`,
      '_granule_complete',
      'printf "%s\\n" "${COMPREPLY[@]}"',
    ].join('\n');
    return execFileSync('bash', ['-c', probe], { encoding: 'utf8' }).split('\n').filter(Boolean).sort();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('granule completion', () => {
  it('knows every command of the CLI', () => {
    const words = completionWords(buildProgram());
    expect(words.get('granule')).toEqual(expect.arrayContaining(['plan', 'deploy', 'runs', 'node', 'completion']));
    expect(words.get('granule runs show')).toEqual(expect.arrayContaining(['--at', '-o', '--output', '--help']));
  });

  it('bash offers the subcommands, then the options of the command typed so far', () => {
    expect(complete('granule ru')).toEqual(['runs']);
    expect(complete('granule runs s')).toEqual(['show']);
    expect(complete('granule runs show r1 --a')).toEqual(['--at']);
    expect(complete('./granule node l')).toEqual(['label', 'list']);
    expect(complete('granule deploy --dry')).toEqual(['--dry-run']);
  });
});
