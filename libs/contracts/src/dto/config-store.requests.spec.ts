import { CONFIG_OPERATIONS } from '../config-store/config-store.api';
import { CONFIG_STORE_REQUESTS } from './config-store.requests';
import { GetTasksRequest, PutTasksRequest, RecordCredentialRequest } from './config-store.dto';
import { validatePayload } from './validate-payload';

describe('CONFIG_STORE_REQUESTS', () => {
  it('has exactly the operations of CONFIG_OPERATIONS, in the same order', () => {
    expect(CONFIG_OPERATIONS).toEqual(Object.keys(CONFIG_STORE_REQUESTS));
    expect(CONFIG_OPERATIONS).toHaveLength(29);
    expect(CONFIG_OPERATIONS).toContain('env.plugin.enable');
  });

  it('checks the task scope against TASK_SCOPES', () => {
    expect(validatePayload(GetTasksRequest, { scope: 'environment', id: '3' }).scope).toBe('environment');
    let refusal: unknown;
    try {
      validatePayload(PutTasksRequest, { scope: 'cluster', id: '3', tasks: [] });
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toMatchObject({
      diagnostics: [
        { path: 'scope', message: 'must be one of the following values: release, environment (got "cluster")' },
      ],
    });
  });

  it('credential.record - times need a date, a time of day and a zone, and a real date', () => {
    const good = {
      uid: 'node-1',
      identity: 'agent-node-1',
      public_key: `U${'A'.repeat(55)}`,
      issued_at: '2026-11-25T10:00:00Z',
      expires_at: '2027-11-25T10:00:00.000+01:00',
    };
    expect(validatePayload(RecordCredentialRequest, good).expires_at).toBe('2027-11-25T10:00:00.000+01:00');
    for (const bad of [
      '2026-11-25',
      '2026-11-25T10:00:00',
      '2026-02-30T10:00:00Z',
      '2026-11-25T24:00:00Z',
      1700000000,
    ]) {
      let refusal: unknown;
      try {
        validatePayload(RecordCredentialRequest, { ...good, revoked_at: bad });
      } catch (err) {
        refusal = err;
      }
      expect(refusal).toMatchObject({
        diagnostics: [
          {
            path: 'revoked_at',
            message: `expected an ISO 8601 time with a zone from 1970 to 9999, such as 2026-11-25T10:00:00Z (got ${JSON.stringify(bad)})`,
          },
        ],
      });
    }
  });
});
