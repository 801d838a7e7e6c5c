import { nodeStatusUpdates, statusAfterOnline, type LoggedEvent } from './node-status-projection';

const at = '2026-11-22T10:00:00.000Z';
const changed = (uid: string, to: string, from?: string): LoggedEvent => ({
  streamId: `node-${uid}`,
  type: 'NodeStatusChanged',
  data: { uid, to, ...(from ? { from } : {}), runId: 'r1', at },
});
const offline = (uid: string): LoggedEvent => ({ streamId: `node-${uid}`, type: 'NodeWentOffline', data: { uid, at } });
const online = (uid: string): LoggedEvent => ({ streamId: `node-${uid}`, type: 'NodeCameOnline', data: { uid, at } });

describe('nodeStatusUpdates', () => {
  it("keeps each node's last word, in the order of those last words", () => {
    const events = [
      changed('1', 'deploying'),
      changed('2', 'deploying'),
      changed('1', 'ready', 'deploying'),
      changed('2', 'error', 'deploying'),
      changed('3', 'stopped'),
    ];
    expect(nodeStatusUpdates(events)).toEqual([
      { uid: '1', kind: 'set', status: 'ready' },
      { uid: '2', kind: 'set', status: 'error' },
      { uid: '3', kind: 'set', status: 'stopped' },
    ]);
  });

  it('turns presence into offline and back_online, whichever came last', () => {
    expect(nodeStatusUpdates([changed('1', 'ready'), offline('1')])).toEqual([
      { uid: '1', kind: 'set', status: 'offline' },
    ]);
    expect(nodeStatusUpdates([offline('1'), online('1')])).toEqual([{ uid: '1', kind: 'back_online' }]);
    // A restarted agent registers again rather than its presence key coming back.
    expect(
      nodeStatusUpdates([
        offline('2'),
        {
          streamId: 'node-2',
          type: 'NodeRegistered',
          data: { uid: '2', hostname: 'h', address: '10.0.0.2', agentVersion: '0.1.0', at },
        },
      ]),
    ).toEqual([{ uid: '2', kind: 'back_online' }]);
    // A run fails the node because it went away: the failure is its last word.
    expect(nodeStatusUpdates([offline('1'), changed('1', 'error', 'deploying')])).toEqual([
      { uid: '1', kind: 'set', status: 'error' },
    ]);
  });

  it('ignores run streams, other node events, unknown statuses and events filed under another node', () => {
    const events: LoggedEvent[] = [
      { streamId: 'run-r1', type: 'TaskSucceeded', data: { key: 'a@1', attempt: 1, at } },
      { streamId: 'run-r1', type: 'NodeStatusChanged', data: { uid: '1', to: 'ready', at } },
      { streamId: 'node-1', type: 'NodeNoted', data: { uid: '1', at } },
      changed('2', 'provisioning'),
      { streamId: 'node-3', type: 'NodeStatusChanged', data: { uid: '4', to: 'ready', at } },
      { streamId: 'node-5', type: 'NodeStatusChanged', data: null },
    ];
    expect(nodeStatusUpdates(events)).toEqual([]);
  });
});

describe('statusAfterOnline', () => {
  it('is the last status a run gave the node, skipping its offline spells', () => {
    expect(
      statusAfterOnline([changed('1', 'deploying'), changed('1', 'ready', 'deploying'), offline('1'), online('1')]),
    ).toBe('ready');
    expect(statusAfterOnline([changed('1', 'error'), offline('1')])).toBe('error');
  });

  it('is discover for a node no run touched', () => {
    expect(
      statusAfterOnline([
        { streamId: 'node-1', type: 'NodeRegistered', data: { uid: '1', at } },
        offline('1'),
        online('1'),
      ]),
    ).toBe('discover');
    expect(statusAfterOnline([])).toBe('discover');
  });
});
