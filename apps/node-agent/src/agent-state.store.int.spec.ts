import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { AGENT_STATE_FILE, AgentStateStore, LEGACY_AGENT_STATE_FILE } from './agent-state.store';
import type { TaskMarker } from './dispatch-decision';

const marker = (dispatchId: string, type = 'shell'): TaskMarker => ({
  dispatchId,
  journalKey: dispatchId,
  runId: 'r',
  key: 'k@n',
  node: 'n',
  attempt: 1,
  type,
  startedAt: '2030-01-01T00:00:00.000Z',
});

describe('AgentStateStore', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'granule-agent-state-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('starts empty without a file and writes nothing until told', async () => {
    const { store, setAside } = await AgentStateStore.open(dir);
    expect([store.running, store.pendingReboots, setAside]).toEqual([undefined, [], undefined]);
    expect(existsSync(path.join(dir, AGENT_STATE_FILE))).toBe(false);
  });

  it('the running marker and pending reboots survive a reopen (a new agent process)', async () => {
    const { store } = await AgentStateStore.open(dir);
    await store.start(marker('r/a@n/1', 'reboot'));
    await store.awaitReboot({ ...marker('r/a@n/1', 'reboot'), rebootDeadline: '2030-01-01T00:05:00.000Z' });
    await store.start(marker('r/b@n/1'));

    const { store: reopened } = await AgentStateStore.open(dir);
    expect(reopened.running?.dispatchId).toBe('r/b@n/1');
    expect(reopened.pendingReboots.map((m) => [m.dispatchId, m.rebootDeadline])).toEqual([
      ['r/a@n/1', '2030-01-01T00:05:00.000Z'],
    ]);
    expect(reopened.pendingReboot('r/a@n/1')?.type).toBe('reboot');

    await reopened.forget('r/b@n/1');
    await reopened.forget('r/a@n/1');
    const { store: last } = await AgentStateStore.open(dir);
    expect([last.running, last.pendingReboots]).toEqual([undefined, []]);
  });

  it('the process group of the running task is written with its marker, the latest attempt replacing the one before', async () => {
    const { store } = await AgentStateStore.open(dir);
    await store.start(marker('r/b@n/1'));
    await store.recordProcess('r/b@n/1', { pgid: 100, startTime: 5, bootId: 'boot', runId: 'r', taskId: 'b' });
    await store.recordProcess('r/other@n/1', { pgid: 300, runId: 'r', taskId: 'other' });
    await store.recordProcess('r/b@n/1', { pgid: 200, startTime: 7, bootId: 'boot', runId: 'r', taskId: 'b' });

    const { store: reopened } = await AgentStateStore.open(dir);
    expect(reopened.running).toEqual({
      ...marker('r/b@n/1'),
      process: { pgid: 200, startTime: 7, bootId: 'boot', runId: 'r', taskId: 'b' },
    });
  });

  it('an unreadable file is moved aside and the agent starts without it', async () => {
    await writeFile(path.join(dir, AGENT_STATE_FILE), '{"version": 1, "pendi');
    const { store, setAside } = await AgentStateStore.open(dir, new Date('2030-01-01T00:00:00Z'));
    expect(store.running).toBeUndefined();
    expect(setAside).toBe(path.join(dir, `${AGENT_STATE_FILE}.unreadable-2030-01-01T00-00-00-000Z`));
    expect(await readFile(setAside as string, 'utf8')).toBe('{"version": 1, "pendi');
    expect(await readdir(dir)).toEqual([path.basename(setAside as string)]);
  });

  it('a line torn by a crash is skipped: the last whole state wins, and opening leaves that state alone in the file', async () => {
    const { store } = await AgentStateStore.open(dir);
    await store.start(marker('r/a@n/1'));
    await store.forget('r/a@n/1');
    await store.start(marker('r/b@n/1'));
    store.close();
    const file = path.join(dir, AGENT_STATE_FILE);
    await writeFile(file, `${await readFile(file, 'utf8')}{"version":1,"running":{"dispatchId":"r/c@`);

    const { store: reopened, setAside } = await AgentStateStore.open(dir);
    expect([reopened.running?.dispatchId, setAside]).toEqual(['r/b@n/1', undefined]);
    const lines = (await readFile(file, 'utf8')).trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]).running.dispatchId).toBe('r/b@n/1');
  });

  it('a long-running agent rewrites the file with the current state instead of growing it', async () => {
    const { store } = await AgentStateStore.open(dir);
    for (let i = 0; i < 1100; i++) {
      await store.start(marker(`r/t${i}@n/1`));
      await store.forget(`r/t${i}@n/1`);
    }
    await store.start(marker('r/last@n/1'));
    store.close();
    const lines = (await readFile(path.join(dir, AGENT_STATE_FILE), 'utf8')).trimEnd().split('\n');
    expect(lines.length).toBeLessThan(1000);
    const { store: reopened } = await AgentStateStore.open(dir);
    expect(reopened.running?.dispatchId).toBe('r/last@n/1');
  });

  it('takes over the single-document file of an older agent and removes it', async () => {
    await writeFile(
      path.join(dir, LEGACY_AGENT_STATE_FILE),
      JSON.stringify({ version: 1, running: marker('r/old@n/1'), pendingReboots: [] }, null, 2),
    );
    const { store } = await AgentStateStore.open(dir);
    expect(store.running?.dispatchId).toBe('r/old@n/1');
    expect((await readdir(dir)).sort()).toEqual([AGENT_STATE_FILE]);
    const { store: again } = await AgentStateStore.open(dir);
    expect(again.running?.dispatchId).toBe('r/old@n/1');
  });
});
