import fc from 'fast-check';
import { OutputCollector } from './output-collector';
import { SecretMasker } from './secret-masker';
import type { OutputChunk } from './task-runner.types';

function collect(secrets: string[], chunkBytes = 8, tailBytes = 1000) {
  const chunks: OutputChunk[] = [];
  const collector = new OutputCollector(chunkBytes, tailBytes, (c) => chunks.push(c), new SecretMasker(secrets));
  const text = (stream: string): string =>
    chunks
      .filter((c) => c.stream === stream)
      .map((c) => c.data)
      .join('');
  return { collector, chunks, text };
}

describe('SecretMasker', () => {
  it('masks every occurrence, the longest secret where two start at one place', () => {
    const m = new SecretMasker(['hunter2', 'hunter2-long']);
    expect(m.maskText('a hunter2 b hunter2-long c hunter')).toBe('a *** b *** c hunter');
  });

  it('masks each line of a multi-line secret, but not short lines', () => {
    const key = '-----BEGIN KEY-----\nMIIEabcdef\n}\n-----END KEY-----';
    const m = new SecretMasker([key]);
    expect(m.maskText(`cat:\n${key}\nhead: MIIEabcdef\n}`)).toBe('cat:\n***\nhead: ***\n}');
  });

  it('holds back what may begin a secret until the next bytes tell', () => {
    const m = new SecretMasker(['hunter2']);
    const first = m.mask(Buffer.from('pass=hunt'));
    expect([first.out.toString(), first.held.toString()]).toEqual(['pass=', 'hunt']);
    const second = m.mask(Buffer.concat([first.held, Buffer.from('er2!')]));
    expect([second.out.toString(), second.held.toString()]).toEqual(['***!', '']);
    const last = m.mask(Buffer.from('hunt'), true);
    expect([last.out.toString(), last.held.toString()]).toEqual(['hunt', '']);
  });

  it('with no secret it passes bytes through', () => {
    const m = new SecretMasker(['']);
    expect(m.active).toBe(false);
    expect(m.maskText('anything')).toBe('anything');
  });
});

describe('OutputCollector with secrets', () => {
  it('a secret split across writes and chunks never reaches a chunk or the tail', () => {
    const { collector, chunks, text } = collect(['s3cr3t-value'], 4);
    for (const piece of ['x=s3c', 'r3t-v', 'alue', '\ny=s3cr3t-value\n', 's3cr3t']) collector.write('stdout', piece);
    collector.flush();
    expect(text('stdout')).toBe('x=***\ny=***\ns3cr3t');
    expect(chunks.every((c) => Buffer.byteLength(c.data) <= 4)).toBe(true);
    expect(collector.tail()).toBe('x=***\ny=***\ns3cr3t');
  });

  it('multi-byte secrets and characters split between writes', () => {
    const { collector, text } = collect(['пароль'], 16);
    const bytes = Buffer.from('a пароль b €');
    for (let i = 0; i < bytes.length; i += 3) collector.write('stderr', bytes.subarray(i, i + 3));
    collector.flush();
    expect(text('stderr')).toBe('a *** b €');
  });

  it('property - however the output is cut into writes, the secret never appears and the rest is kept', () => {
    const secret = 'Tr0ub4dor&3';
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', ' ', '\n', 'Tr0', 'ub4', 'dor&3', secret, 'é'), { maxLength: 30 }),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 10 }),
        (parts, cuts) => {
          const input = Buffer.from(parts.join(''));
          const { collector, text } = collect([secret], 5);
          let at = 0;
          for (let k = 0; at < input.length; k++) {
            const n = cuts[k % cuts.length];
            collector.write('stdout', input.subarray(at, at + n));
            at += n;
          }
          collector.flush();
          const out = text('stdout');
          expect(out).not.toContain(secret);
          expect(out).toBe(parts.join('').split(secret).join('***'));
        },
      ),
    );
  });
});
