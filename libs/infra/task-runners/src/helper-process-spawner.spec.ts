import { encodeSpawnRequest, frameDecoder, type HelperMessage } from './helper-process-spawner';

/** A reply frame as granule-spawn writes it. */
function frame(type: string, id: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUInt32LE(5 + payload.length, 0);
  head.write(type, 4, 'latin1');
  head.writeUInt32LE(id, 5);
  return Buffer.concat([head, payload]);
}

function ints(...values: number[]): Buffer {
  const b = Buffer.alloc(4 * values.length);
  values.forEach((v, i) => b.writeInt32LE(v, 4 * i));
  return b;
}

describe('native spawn helper frames', () => {
  const replies = Buffer.concat([
    frame('R', 0),
    frame('P', 7, Buffer.concat([ints(4242), Buffer.from([0x10, 0x27, 0, 0, 1, 0, 0, 0])])), // start time 2^32 + 10000
    frame('O', 7, Buffer.from('héllo\n')),
    frame('E', 7, Buffer.from('oops\n')),
    frame('P', 8, Buffer.concat([ints(99), Buffer.alloc(8, 0xff)])), // start time unknown
    frame('X', 7, Buffer.concat([ints(3, 0), Buffer.from('\0\0')])),
    frame('X', 8, Buffer.concat([ints(-1, 15), Buffer.from('\0\0')])),
    frame('X', 9, Buffer.concat([ints(-1, 0), Buffer.from('ENOENT\0spawn nope ENOENT\0')])),
  ]);
  const expected: HelperMessage[] = [
    { t: 'ready' },
    { t: 'spawned', id: 7, pid: 4242, startTime: 2 ** 32 + 10000 },
    { t: 'out', id: 7, stream: 'stdout', data: Buffer.from('héllo\n') },
    { t: 'out', id: 7, stream: 'stderr', data: Buffer.from('oops\n') },
    { t: 'spawned', id: 8, pid: 99 },
    { t: 'exit', id: 7, code: 3, signal: null },
    { t: 'exit', id: 8, code: null, signal: 'SIGTERM' },
    { t: 'exit', id: 9, code: null, signal: null, error: { message: 'spawn nope ENOENT', code: 'ENOENT' } },
  ];

  it('decodes every reply, whole or cut at any byte', () => {
    const whole: HelperMessage[] = [];
    frameDecoder((m) => whole.push(m))(replies);
    expect(whole).toEqual(expected);

    const bytewise: HelperMessage[] = [];
    const decode = frameDecoder((m) => bytewise.push(m));
    for (let i = 0; i < replies.length; i++) decode(replies.subarray(i, i + 1));
    expect(bytewise).toEqual(expected);
  });

  it('encodes a spawn request: counts, then command, cwd, argv (the command first) and NAME=value entries', () => {
    const frameBytes = encodeSpawnRequest({
      id: 5,
      command: '/bin/sh',
      args: ['-c', 'echo é'],
      cwd: '/srv',
      env: { A: '1', B: 'x=y' },
    });
    if (typeof frameBytes === 'string') throw new Error(frameBytes);
    expect(frameBytes.readUInt32LE(0)).toBe(frameBytes.length - 4);
    expect(String.fromCharCode(frameBytes[4])).toBe('S');
    expect([frameBytes.readUInt32LE(5), frameBytes.readUInt32LE(9), frameBytes.readUInt32LE(13)]).toEqual([5, 3, 2]);
    expect(frameBytes.subarray(17).toString('utf8').split('\0')).toEqual([
      '/bin/sh',
      '/srv',
      '/bin/sh',
      '-c',
      'echo é',
      'A=1',
      'B=x=y',
      '',
    ]);
  });

  it('refuses a request with a NUL byte in any string, naming the command', () => {
    expect(encodeSpawnRequest({ id: 1, command: '/bin/sh', args: ['-c', 'a\0b'], cwd: '/', env: {} })).toBe(
      'spawn /bin/sh: a command, argument, directory or environment entry contains a NUL byte',
    );
    expect(typeof encodeSpawnRequest({ id: 1, command: '/bin/sh', args: [], cwd: '/', env: { K: 'v\0' } })).toBe(
      'string',
    );
  });
});
