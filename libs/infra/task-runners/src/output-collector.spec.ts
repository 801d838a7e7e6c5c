import { OutputCollector } from './output-collector';
import type { OutputChunk } from './task-runner.types';

function collect(chunkBytes: number, tailBytes: number): { collector: OutputCollector; chunks: OutputChunk[] } {
  const chunks: OutputChunk[] = [];
  return { collector: new OutputCollector(chunkBytes, tailBytes, (c) => chunks.push(c)), chunks };
}

describe('OutputCollector', () => {
  it('splits a large write into chunks of at most chunkBytes, numbered in order', () => {
    const { collector, chunks } = collect(4, 100);
    collector.write('stdout', 'abcdefghij');
    expect(chunks).toEqual([
      { stream: 'stdout', data: 'abcd', seq: 0, try: 1 },
      { stream: 'stdout', data: 'efgh', seq: 1, try: 1 },
      { stream: 'stdout', data: 'ij', seq: 2, try: 1 },
    ]);
  });

  it('holds back a character split between two writes until it is complete', () => {
    const { collector, chunks } = collect(16, 100);
    const euro = Buffer.from('€'); // 3 bytes
    collector.write('stderr', Buffer.concat([Buffer.from('x'), euro.subarray(0, 2)]));
    collector.write('stderr', euro.subarray(2));
    expect(chunks.map((c) => c.data)).toEqual(['x', '€']);
  });

  it('cuts chunks on character boundaries', () => {
    const { collector, chunks } = collect(5, 100);
    collector.write('stdout', 'ééé'); // 6 bytes
    expect(chunks.map((c) => c.data)).toEqual(['éé', 'é']);
  });

  it('keeps the last tailBytes of both streams, interleaved, starting on a whole character', () => {
    const { collector } = collect(4, 4);
    collector.write('stdout', 'hello ');
    collector.write('stderr', 'wörld');
    expect(collector.tail()).toBe('rld'); // the last 4 bytes hold half of 'ö': the tail starts after it
    const { collector: c2 } = collect(4, 7);
    c2.write('stdout', 'ab');
    c2.write('stderr', 'cd');
    c2.write('stdout', 'ef');
    expect(c2.tail()).toBe('abcdef');
  });

  it('flush emits an incomplete trailing sequence as a replacement character', () => {
    const { collector, chunks } = collect(8, 100);
    collector.write('stdout', Buffer.from([0x61, 0xe2, 0x82]));
    collector.flush();
    expect(chunks.map((c) => c.data)).toEqual(['a', '\uFFFD']);
  });
});
