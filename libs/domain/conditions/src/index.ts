/**
 * @granule/conditions: the task `condition:` language (Fuel's expression syntax plus the strict
 * `api.` object). Compile once with `compileCondition`, evaluate many times with
 * `evaluateCondition`. The grammar is documented in README.md of this lib.
 */
export {
  CompiledCondition,
  checkCondition,
  compileCondition,
  evaluateCondition,
  referencesNode,
} from './compile-condition';
export { ConditionEvaluationError, ConditionSyntaxError } from './condition.errors';
export type { ConditionContext, ConditionValue } from './condition.types';
