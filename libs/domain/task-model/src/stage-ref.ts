import { FieldProblem, TaskFieldError, describeValue } from './task-diagnostics';
import { STAGES, StageName, StageRef } from './types';

const NUMBER = '[+-]?(?:\\d+(?:\\.\\d*)?|\\.\\d+)(?:[eE][+-]?\\d+)?';
const STAGE_RE = new RegExp(`^(${STAGES.join('|')})(?:/(${NUMBER}))?$`);
const NUMBER_RE = new RegExp(`^${NUMBER}$`);
// Longest name first so `post_deployment...` is not read as `deployment`.
const NAME_PREFIX_RE = /^(pre_deployment|post_deployment|deployment)((?:[\s:/+\-.\d].*)?)$/;

/**
 * Reads a `stage:` value: a stage name with an optional numeric postfix after `/`
 * (seed 000): `pre_deployment`, `post_deployment/50`, `pre_deployment/-99.9`, `post_deployment/+5`.
 * The priority is 0 without a postfix. Throws `TaskFieldError` (code `TASK_BAD_STAGE`) with a
 * message that shows the right form for typos such as `post_deployment:: 50`.
 */
export function parseStageRef(raw: string): StageRef {
  const result = readStageRef(raw);
  if ('code' in result) throw new TaskFieldError(result.code, result.message);
  return result;
}

/** `parseStageRef` without the throw, for the file parsers. */
export function readStageRef(raw: unknown): StageRef | FieldProblem {
  if (typeof raw !== 'string') {
    return {
      code: 'TASK_BAD_STAGE',
      message: `stage must be a string like 'post_deployment/50', got ${describeValue(raw)}`,
    };
  }
  const m = STAGE_RE.exec(raw);
  if (m) {
    const priority = m[2] === undefined ? 0 : Number(m[2]);
    return { name: m[1] as StageName, priority: priority === 0 ? 0 : priority, raw };
  }
  return { code: 'TASK_BAD_STAGE', message: `stage '${raw}' is not valid: ${stageHint(raw)}` };
}

/** The advice part of a bad-stage message: the corrected text when it can be guessed. */
export function stageHint(raw: string): string {
  const m = NAME_PREFIX_RE.exec(raw.trim());
  if (m) {
    const rest = m[2].replace(/^[\s:/]+/, '').trim();
    if (rest === '') return `write it as '${m[1]}'`;
    if (NUMBER_RE.test(rest)) return `write it as '${m[1]}/${rest}'`;
    return `the postfix after '/' must be a number, e.g. '${m[1]}/50'`;
  }
  return `expected one of ${STAGES.join(', ')}, optionally with a numeric postfix like 'post_deployment/50'`;
}
