import type { DeploymentRequested } from '@granule/run-events';
import { environmentStatusAfter, runSpeaksForEnvironment } from './environment-status-projection';

const request = (over: Partial<DeploymentRequested['data']> = {}): DeploymentRequested['data'] => ({
  runId: 'r1',
  envId: 'prod',
  graph: 'default',
  dryRun: false,
  noop: false,
  ...over,
});

describe('environment status projection', () => {
  it("only a real deployment of an environment's default graph speaks for the environment", () => {
    expect(runSpeaksForEnvironment(request())).toBe(true);
    expect(runSpeaksForEnvironment(request({ strategy: { name: 's' } }))).toBe(true);
    expect(runSpeaksForEnvironment(request({ retryOf: { runId: 'r0', failedOnly: true } }))).toBe(true);
    expect(runSpeaksForEnvironment(request({ envId: undefined }))).toBe(false);
    expect(runSpeaksForEnvironment(request({ graph: 'provisioning' }))).toBe(false);
    expect(runSpeaksForEnvironment(request({ dryRun: true }))).toBe(false);
    expect(runSpeaksForEnvironment(request({ noop: true }))).toBe(false);
    expect(runSpeaksForEnvironment(request({ check: true }))).toBe(false);
    expect(runSpeaksForEnvironment(request({ childOf: { runId: 's1', group: 'g', phase: 'deploy' } }))).toBe(false);
  });

  it("maps a run's course to Fuel's cluster statuses", () => {
    const cases: [string, unknown, string | undefined][] = [
      ['PlanAccepted', { planId: 'p' }, 'deployment'],
      ['StrategyAccepted', { plan: {} }, 'deployment'],
      ['DeploymentResumed', { at: 't' }, 'deployment'],
      ['DeploymentSucceeded', { at: 't', failedNodes: [] }, 'operational'],
      ['DeploymentSucceeded', { at: 't', failedNodes: ['3'] }, 'partially_deployed'],
      ['DeploymentSucceeded', { at: 't', failedNodes: [], outcome: 'partial' }, 'partially_deployed'],
      ['DeploymentSucceeded', { at: 't', failedNodes: [], outcome: 'success' }, 'operational'],
      ['DeploymentFailed', { at: 't', reason: 'x', failedNodes: ['1'] }, 'error'],
      ['DeploymentStopped', { at: 't', failedNodes: [] }, 'stopped'],
      ['DeploymentStopped', { at: 't', failedNodes: [], beforeStart: true }, undefined],
      ['DeploymentRefused', { code: 'X', reason: 'x' }, undefined],
      ['TaskSucceeded', { key: 'a@1' }, undefined],
    ];
    expect(cases.map(([type, data]) => environmentStatusAfter({ type, data }))).toEqual(
      cases.map(([, , status]) => status),
    );
  });
});
