import { CONFIG_OPERATIONS } from '../config-store/config-store.api';
import { CONFIG_STORE_REQUESTS } from './config-store.requests';
import { GetTasksRequest, PutTasksRequest } from './config-store.dto';
import { validatePayload } from './validate-payload';

describe('CONFIG_STORE_REQUESTS', () => {
  it('has exactly the operations of CONFIG_OPERATIONS, in the same order', () => {
    expect(CONFIG_OPERATIONS).toEqual(Object.keys(CONFIG_STORE_REQUESTS));
    expect(CONFIG_OPERATIONS).toHaveLength(28);
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
});
