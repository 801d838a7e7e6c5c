import { redactUrl } from './env-config';
import { connectionFailure, reasonOf } from './database';

describe('database messages', () => {
  it('redactUrl hides the password only', () => {
    expect(redactUrl('postgres://user:secret@db:5432/granule')).toBe('postgres://user:***@db:5432/granule');
    expect(redactUrl('postgres://postgres@127.0.0.1:5432/granule')).toBe('postgres://postgres@127.0.0.1:5432/granule');
  });

  it("reasonOf gives an AggregateError its first error's words, and an error without a message its code", () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' });
    expect(reasonOf(new AggregateError([refused, new Error('connect ECONNREFUSED 127.0.0.1:5432')], ''))).toBe(
      'connect ECONNREFUSED ::1:5432',
    );
    expect(reasonOf(Object.assign(new Error(''), { code: 'ETIMEDOUT' }))).toBe('ETIMEDOUT');
    expect(reasonOf('plain words')).toBe('plain words');
  });

  it('connectionFailure says what to do for a refused connection, a missing database and a rejected login', () => {
    const url = 'postgres://granule:secret@db:5432/granule';
    const refused = new AggregateError(
      [Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:5432'), { code: 'ECONNREFUSED' })],
      '',
    );
    const missing = Object.assign(new Error('database "granule" does not exist'), { code: '3D000' });
    const login = Object.assign(new Error('password authentication failed for user "granule"'), { code: '28P01' });
    expect([refused, missing, login].map((e) => connectionFailure(url, e).message)).toEqual([
      'cannot connect to PostgreSQL at postgres://granule:***@db:5432/granule: connect ECONNREFUSED 10.0.0.1:5432 — start it (tools/setup.sh) or set GRANULE_DATABASE_URL',
      'cannot connect to PostgreSQL at postgres://granule:***@db:5432/granule: database "granule" does not exist — create it (the config-store does with GRANULE_DATABASE_CREATE=true) or set GRANULE_DATABASE_URL',
      'cannot connect to PostgreSQL at postgres://granule:***@db:5432/granule: password authentication failed for user "granule" — fix the user or password in GRANULE_DATABASE_URL',
    ]);
    expect(connectionFailure(url, login).code).toBe('DATABASE_UNREACHABLE');
  });
});
