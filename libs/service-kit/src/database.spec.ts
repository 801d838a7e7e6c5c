import { redactUrl } from './env-config';
import { reasonOf } from './database';

describe('database messages', () => {
  it('redactUrl hides the password only', () => {
    expect(redactUrl('postgres://user:secret@db:5432/granule')).toBe('postgres://user:***@db:5432/granule');
    expect(redactUrl('postgres://postgres@127.0.0.1:5432/granule')).toBe('postgres://postgres@127.0.0.1:5432/granule');
  });

  it("reasonOf gives an AggregateError its first error's words, and an error without a message its code", () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' });
    expect(reasonOf(new AggregateError([refused, new Error('connect ECONNREFUSED 127.0.0.1:5432')], ''))).toBe('connect ECONNREFUSED ::1:5432');
    expect(reasonOf(Object.assign(new Error(''), { code: 'ETIMEDOUT' }))).toBe('ETIMEDOUT');
    expect(reasonOf('plain words')).toBe('plain words');
  });
});
