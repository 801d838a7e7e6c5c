import type { PlanReplyMessage, PlanRequestMessage } from '@granule/contracts';
import type { ExecutablePlan } from '@granule/deployment-run';
import type { PlanSource } from '@granule/run-coordination';
import { SecretsError, type SecretOpener } from '@granule/secrets';
import { SECRETS_KEY_VARIABLE, formatPath, sealedPaths, valueAt, type SealedValue } from '@granule/task-model';

/**
 * The coordinators' plan source: a plan whose sealed secrets this orchestrator cannot open (no
 * `GRANULE_SECRETS_KEY`, or values sealed for another key) is refused when the run loads it, with
 * the task and parameter named, instead of failing each of its dispatches later. Each plan is
 * checked once; what opens is kept by the opener for the dispatches.
 */
export class SealedPlanCheck implements PlanSource {
  private readonly checked = new WeakSet<ExecutablePlan>();

  constructor(
    private readonly plans: PlanSource,
    private readonly secrets?: SecretOpener,
  ) {}

  request(request: PlanRequestMessage): Promise<PlanReplyMessage> {
    return this.plans.request(request);
  }

  async load(planId: string): Promise<ExecutablePlan> {
    const plan = await this.plans.load(planId);
    if (!this.checked.has(plan)) {
      this.check(plan);
      this.checked.add(plan);
    }
    return plan;
  }

  private check(plan: ExecutablePlan): void {
    // Every instance of a task has that task's parameters: one look per task, not per node.
    const seen = new Set<string>();
    for (let i = 0; i < plan.parameters.length; i++) {
      if (seen.has(plan.task[i])) continue;
      seen.add(plan.task[i]);
      const params = plan.parameters[i];
      for (const path of sealedPaths(params)) {
        const where = `task ${plan.keys[i]}: parameters.${formatPath(path)}`;
        if (!this.secrets)
          throw new SecretsError(
            'SECRETS_NO_KEY',
            `${where} is sealed and this orchestrator has no ${SECRETS_KEY_VARIABLE} to open it at dispatch: give the orchestrator the installation's private key`,
          );
        try {
          this.secrets.open(valueAt(params, path) as SealedValue);
        } catch (err) {
          throw new SecretsError('SECRETS_CANNOT_OPEN', `${where}: ${(err as Error).message}`, { cause: err });
        }
      }
    }
  }
}
