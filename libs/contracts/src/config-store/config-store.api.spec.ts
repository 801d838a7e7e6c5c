import { TASK_SCOPES, configSubject, configSubjectWildcard } from './config-store.api';

describe('config-store subjects', () => {
  it('are <prefix>.config.<operation>, under one wildcard', () => {
    expect(configSubject('test.abc', 'tasks.get')).toBe('test.abc.config.tasks.get');
    expect(configSubjectWildcard('granule')).toBe('granule.config.>');
  });
});

describe('TASK_SCOPES', () => {
  it('are a release and an environment', () => {
    expect(TASK_SCOPES).toEqual(['release', 'environment']);
  });
});
