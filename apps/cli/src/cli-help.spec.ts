import type { Command } from 'commander';
import { buildProgram, checkOutputFormat } from './program';

/** Every command of the CLI with its full `--help` text (including the text added after it). */
function everyCommand(): { name: string; cmd: Command; help: string }[] {
  const out: { name: string; cmd: Command; help: string }[] = [];
  const visit = (cmd: Command, prefix: string): void => {
    let help = '';
    cmd.configureOutput({ writeOut: (s) => (help += s), writeErr: (s) => (help += s) });
    cmd.outputHelp();
    out.push({ name: prefix, cmd, help });
    for (const sub of cmd.commands) visit(sub, `${prefix} ${sub.name()}`);
  };
  visit(buildProgram(), 'granule');
  return out;
}

const commands = everyCommand();
const leaves = commands.filter((c) => c.cmd.commands.length === 0);

describe('granule --help - one way to write things', () => {
  it('walks every command', () => {
    expect(leaves.map((c) => c.name)).toEqual(
      expect.arrayContaining(['granule plan', 'granule retry', 'granule plugin validate']),
    );
    expect(leaves.length).toBeGreaterThan(40);
  });

  it.each(leaves.map((c) => [c.name, c] as const))('%s - has examples, each written "granule ..."', (_name, c) => {
    const lines = c.help.split('\n');
    const start = lines.findIndex((l) => /^Examples?:$/.test(l));
    expect(start).toBeGreaterThan(-1);
    const examples = lines.slice(start + 1).filter((l) => l.startsWith('  '));
    expect(examples.length).toBeGreaterThan(0);
    for (const line of examples) expect(line).toMatch(/^ {2}(granule |# )/);
  });

  // Commands that print no data: a credential file (its own format), a shell script, or what
  // they did to a trust store. Every other leaf prints data and takes -o json|yaml.
  const NO_DATA: Record<string, string> = {
    'granule auth init': 'writes a trust store and says where',
    'granule auth issue': 'prints a NATS credential file',
    'granule agent enroll': 'prints a NATS credential file',
    'granule agent revoke': 'says what it revoked',
    'granule agent record': 'says what it recorded',
    'granule agent package': 'writes a package file and says where',
    'granule completion': 'prints a shell script',
  };

  it('the commands said to print no data exist', () => {
    expect(Object.keys(NO_DATA).filter((name) => !leaves.some((c) => c.name === name))).toEqual([]);
  });

  it.each(leaves.filter((c) => !(c.name in NO_DATA)).map((c) => [c.name, c] as const))(
    '%s - prints its data as -o json or -o yaml too',
    (_name, c) => {
      const output = c.cmd.options.find((o) => o.long === '--output');
      expect(output?.short).toBe('-o');
      expect(`${output?.flags}: ${output?.description}`).toMatch(/\bjson\b[^]*\byaml\b|\byaml\b[^]*\bjson\b/);
    },
  );

  it.each(commands.map((c) => [c.name, c] as const))(
    '%s - no "./granule", "$ granule", or a default said twice',
    (_name, c) => {
      expect(c.help).not.toMatch(/\.\/granule|\$ granule/);
      for (const option of c.cmd.options)
        if (option.defaultValue !== undefined) expect(`${option.flags}: ${option.description}`).not.toMatch(/default/i);
    },
  );

  // `-o` is checked before a command acts, against the formats its description names: its
  // default must be one of them, and a format no mode prints is refused.
  it.each(leaves.filter((c) => c.cmd.options.some((o) => o.long === '--output')).map((c) => [c.name, c] as const))(
    '%s - -o takes its default and refuses xml before acting',
    (_name, c) => {
      expect(() => checkOutputFormat(c.cmd)).not.toThrow();
      c.cmd.setOptionValue('output', 'xml');
      expect(() => checkOutputFormat(c.cmd)).toThrow(/^-o xml: expected one of /);
    },
  );

  // README: every command takes `-o table` or `-o text` for its format for people, by either name.
  it.each(
    leaves
      // One format for people whatever the mode (plan's --simulate switches it: parseFormat takes both there).
      .filter((c) =>
        /^[^(]*\b(table|text)\b[^(]*$/.test(c.cmd.options.find((o) => o.long === '--output')?.description ?? ''),
      )
      .map((c) => [c.name, c] as const),
  )('%s - -o table and -o text are one format', (_name, c) => {
    const description = c.cmd.options.find((o) => o.long === '--output')?.description ?? '';
    const human = /\btable\b/.test(description.replace(/\([^)]*\)/g, '')) ? 'table' : 'text';
    for (const given of ['table', 'text']) {
      c.cmd.setOptionValue('output', given);
      checkOutputFormat(c.cmd);
      expect([given, c.cmd.opts<{ output: string }>().output]).toEqual([given, human]);
    }
  });
});
