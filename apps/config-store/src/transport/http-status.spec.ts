import { httpStatusFor } from './config-store.api';

describe('httpStatusFor', () => {
  it('tells the caller apart from config-store: its own refusal is 401, an orchestrator refusing config-store is 502', () => {
    expect(httpStatusFor('UNAUTHORIZED')).toBe(401);
    expect(httpStatusFor('FORBIDDEN')).toBe(502);
  });

  it('maps run queries forwarded to the orchestrators: unknown run 404, none answering 503, too slow 504', () => {
    expect([
      httpStatusFor('RUN_UNKNOWN'),
      httpStatusFor('ORCHESTRATOR_UNAVAILABLE'),
      httpStatusFor('ORCHESTRATOR_TIMEOUT'),
    ]).toEqual([404, 503, 504]);
  });

  it('treats planner and plugin codes as bad input and anything unknown as a server error', () => {
    expect([httpStatusFor('PLAN_CYCLE_X'), httpStatusFor('PLUGIN_BAD'), httpStatusFor('SOMETHING_NEW')]).toEqual([
      400, 400, 500,
    ]);
  });

  it('an upload over the size limit is 413', () => {
    expect(httpStatusFor('ARTIFACT_TOO_LARGE')).toBe(413);
  });
});
