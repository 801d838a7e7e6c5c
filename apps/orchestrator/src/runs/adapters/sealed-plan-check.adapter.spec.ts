import type { ExecutablePlan } from '@granule/deployment-run';
import type { PlanSource } from '@granule/run-coordination';
import { SecretOpener, SecretSealer, generateSecretsKeyPair } from '@granule/secrets';
import { SealedPlanCheck } from './sealed-plan-check.adapter';

describe('SealedPlanCheck', () => {
  const pair = generateSecretsKeyPair();
  const sealer = new SecretSealer(pair.publicKey);
  const planWith = (parameters: Record<string, unknown>[]): ExecutablePlan =>
    ({
      keys: parameters.map((_, i) => `t${i}@n1`),
      task: parameters.map((_, i) => `t${i}`),
      parameters,
    }) as unknown as ExecutablePlan;
  const source = (plan: ExecutablePlan): PlanSource => ({
    request: () => Promise.reject(new Error('not used')),
    load: () => Promise.resolve(plan),
  });

  it('passes a plan whose sealed values open with its key, and one without any', async () => {
    const plan = planWith([{ cmd: 'x' }, { cmd: 'y', env: { PW: sealer.seal('p') } }]);
    await expect(new SealedPlanCheck(source(plan), new SecretOpener(pair.secretKey)).load('p1')).resolves.toBe(plan);
    const plain = planWith([{ cmd: 'x' }]);
    await expect(new SealedPlanCheck(source(plain)).load('p1')).resolves.toBe(plain);
  });

  it('refuses a plan with sealed values when it has no key, naming the task and parameter', async () => {
    const plan = planWith([{ cmd: 'x' }, { cmd: 'y', env: { PW: sealer.seal('p') } }]);
    await expect(new SealedPlanCheck(source(plan)).load('p1')).rejects.toMatchObject({
      code: 'SECRETS_NO_KEY',
      message: expect.stringMatching(
        /^task t1@n1: parameters\.env\.PW is sealed and this orchestrator has no GRANULE_SECRETS_KEY/,
      ),
    });
  });

  it('refuses a plan sealed for another key', async () => {
    const plan = planWith([{ cmd: 'y', password: sealer.seal('p') }]);
    const other = new SecretOpener(generateSecretsKeyPair().secretKey);
    await expect(new SealedPlanCheck(source(plan), other).load('p1')).rejects.toMatchObject({
      code: 'SECRETS_CANNOT_OPEN',
      message: expect.stringMatching(/^task t0@n1: parameters\.password: a sealed value does not open/),
    });
  });
});
