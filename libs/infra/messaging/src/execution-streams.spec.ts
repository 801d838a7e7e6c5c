import { AckPolicy, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { agentConsumerConfig, executionStreamConfigs } from './execution-streams';
import { NatsUnreachableError, redactUrl, RedisUnreachableError } from './messaging.errors';

const SECOND_NS = 1_000_000_000;

describe('executionStreamConfigs', () => {
  it('names the streams after the prefix and captures its cmd, dispatch and result subjects', () => {
    const configs = executionStreamConfigs('t-1');
    expect(configs.map((c) => [c.name, c.subjects])).toEqual([
      ['T_1_COMMANDS', ['t-1.cmd.>']],
      ['T_1_DISPATCH', ['t-1.dispatch.>']],
      ['T_1_RESULTS', ['t-1.result.>']],
      ['T_1_LOGS', ['t-1.log.>']],
      ['T_1_EVENTS', ['t-1.events.>']],
      ['T_1_STORED_LOGS', ['t-1.logs.stored.>']],
    ]);
  });

  it('commands and dispatch are work queues, results are kept 7 days; all on file with one replica', () => {
    const [commands, dispatch, results] = executionStreamConfigs('granule');
    expect([commands.retention, dispatch.retention, results.retention]).toEqual([
      RetentionPolicy.Workqueue,
      RetentionPolicy.Workqueue,
      RetentionPolicy.Limits,
    ]);
    expect([commands.duplicate_window, dispatch.duplicate_window, results.duplicate_window]).toEqual([
      120 * SECOND_NS,
      600 * SECOND_NS,
      600 * SECOND_NS,
    ]);
    expect([commands.max_age, dispatch.max_age, results.max_age]).toEqual([0, 0, 7 * 24 * 3600 * SECOND_NS]);
    for (const c of [commands, dispatch, results]) expect([c.storage, c.num_replicas]).toEqual([StorageType.File, 1]);
  });

  it('task logs wait in a work queue until an orchestrator stored them, at most 7 days and 4 GiB', () => {
    const logs = executionStreamConfigs('granule')[3];
    expect([logs.name, logs.retention, logs.max_age, logs.max_bytes, logs.storage]).toEqual([
      'GRANULE_LOGS',
      RetentionPolicy.Workqueue,
      7 * 24 * 3600 * SECOND_NS,
      4 * 1024 ** 3,
      StorageType.File,
    ]);
  });

  it('the read spine keeps committed events a day and 1 GiB, dropping the outbox repeats of 10 minutes', () => {
    const events = executionStreamConfigs('granule')[4];
    expect([
      events.name,
      events.retention,
      events.max_age,
      events.max_bytes,
      events.duplicate_window,
      events.storage,
    ]).toEqual([
      'GRANULE_EVENTS',
      RetentionPolicy.Limits,
      24 * 3600 * SECOND_NS,
      1024 ** 3,
      600 * SECOND_NS,
      StorageType.File,
    ]);
  });

  it('stored task output is kept a day and 1 GiB, with a 10 minute duplicate window, apart from the LOGS work queue', () => {
    const stored = executionStreamConfigs('granule')[5];
    expect([
      stored.name,
      stored.subjects,
      stored.retention,
      stored.max_age,
      stored.max_bytes,
      stored.duplicate_window,
    ]).toEqual([
      'GRANULE_STORED_LOGS',
      ['granule.logs.stored.>'],
      RetentionPolicy.Limits,
      24 * 3600 * SECOND_NS,
      1024 ** 3,
      600 * SECOND_NS,
    ]);
  });
});

describe('agentConsumerConfig', () => {
  it('is a durable per node, filtered to its dispatch subject, one task at a time', () => {
    expect(agentConsumerConfig('granule', 'node-7')).toMatchObject({
      durable_name: 'agent-node-7',
      filter_subject: 'granule.dispatch.node-7',
      ack_policy: AckPolicy.Explicit,
      max_ack_pending: 1,
      ack_wait: 60 * SECOND_NS,
      num_replicas: 1,
      inactive_threshold: 7 * 24 * 3600 * SECOND_NS,
    });
  });
});

describe('connection errors', () => {
  it('name the address without its password, the reason and the fix', () => {
    expect(new NatsUnreachableError('nats://agent:s3cret@10.0.0.5:4222', 'connection refused').message).toBe(
      'cannot reach NATS at nats://agent:***@10.0.0.5:4222: connection refused — start it (tools/setup.sh) or set GRANULE_NATS_URL',
    );
    expect(new RedisUnreachableError('redis://:pw@cache:6379/2', 'connect ECONNREFUSED').message).toBe(
      'cannot reach Redis at redis://:***@cache:6379/2: connect ECONNREFUSED — start it (tools/setup.sh) or set GRANULE_REDIS_URL',
    );
  });

  it('redactUrl leaves URLs without a password alone', () => {
    expect(redactUrl('nats://127.0.0.1:4222')).toBe('nats://127.0.0.1:4222');
    expect(redactUrl('nats://token@host:4222')).toBe('nats://token@host:4222');
  });
});
