import { planLaunch } from './launch-plan';
import { encodeLaunchRequest, frameDecoder, type HelperMessage } from './native-helper.protocol';

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
    frame('X', 7, ints(3, 0, 0)),
    frame('X', 8, ints(-1, 15, 0)),
    frame('X', 9, ints(-1, 0, 2)), // ENOENT
    frame('X', 10, ints(-1, 6, 0)), // SIGABRT, which os.constants also names SIGIOT
    frame('X', 11, ints(-1, 0, 11)), // EAGAIN, also EWOULDBLOCK
  ]);
  const expected: HelperMessage[] = [
    { t: 'ready' },
    { t: 'spawned', id: 7, pid: 4242, startTime: 2 ** 32 + 10000 },
    { t: 'out', id: 7, stream: 'stdout', data: Buffer.from('héllo\n') },
    { t: 'out', id: 7, stream: 'stderr', data: Buffer.from('oops\n') },
    { t: 'spawned', id: 8, pid: 99 },
    { t: 'exit', id: 7, code: 3, signal: null },
    { t: 'exit', id: 8, code: null, signal: 'SIGTERM' },
    { t: 'exit', id: 9, code: null, signal: null, startError: 'ENOENT' },
    { t: 'exit', id: 10, code: null, signal: 'SIGABRT' },
    { t: 'exit', id: 11, code: null, signal: null, startError: 'EAGAIN' },
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

  it('encodes a launch plan: flags, drain time, counts, then file, cwd, argv and NAME=value entries', () => {
    const plan = planLaunch(
      { command: '/bin/sh', args: ['-c', 'echo é'], cwd: '/srv', env: { A: '1', B: 'x=y' } },
      { timeoutMs: null, killGraceMs: 0 },
    );
    const frameBytes = encodeLaunchRequest(5, plan);
    expect(frameBytes.readUInt32LE(0)).toBe(frameBytes.length - 4);
    expect(String.fromCharCode(frameBytes[4])).toBe('S');
    expect([5, 9, 13, 17, 21].map((at) => frameBytes.readUInt32LE(at))).toEqual([5, 1, 1000, 3, 2]);
    expect(frameBytes.subarray(25).toString('utf8').split('\0')).toEqual([
      '/bin/sh',
      '/srv',
      '/bin/sh',
      '-c',
      'echo é',
      'A=1',
      'B=x=y',
      '',
    ]);
    const ownGroupless = encodeLaunchRequest(6, { ...plan, newSession: false, drainMs: 0 });
    expect([ownGroupless.readUInt32LE(9), ownGroupless.readUInt32LE(13)]).toEqual([0, 0]);
  });
});
