import type { Diagnostic } from '@granule/core';
import type { NodeSpec } from '@granule/task-model';
import { ConditionEvaluationError, ConditionSyntaxError } from './condition.errors';
import { parseCondition } from './condition-parser';
import type { ComparisonOperator, ConditionAst, ConditionContext, ConditionValue } from './condition.types';
import { describeValue, isTruthy, readOwnPath, valuesEqual } from './condition-values';

type Evaluator = (context: ConditionContext) => ConditionValue;

/**
 * A parsed condition, ready to be evaluated any number of times. Create it with
 * `compileCondition`; it is immutable and safe to share and cache.
 */
export class CompiledCondition {
  readonly #run: Evaluator;

  /** @internal use `compileCondition`. */
  constructor(
    /** The condition text as written. */
    readonly source: string,
    /** True when the expression reads `node:` (see `referencesNode`). */
    readonly readsNode: boolean,
    run: Evaluator,
  ) {
    this.#run = run;
  }

  /** Same as `evaluateCondition(this, context)`. */
  evaluate(context: ConditionContext): boolean {
    return isTruthy(this.#run(context));
  }
}

/**
 * Parses a condition once. Throws `ConditionSyntaxError` (code `CONDITION_SYNTAX`) naming the
 * column, what was expected and what was found; unknown namespaces and `api.` members are
 * rejected here, not at evaluation.
 */
export function compileCondition(source: string): CompiledCondition {
  const ast = parseCondition(source);
  const compiler = new Compiler(source);
  const run = compiler.compile(ast);
  return new CompiledCondition(source, compiler.readsNode, run);
}

/**
 * Evaluates a compiled condition and coerces the result to a boolean (null, false, 0, '', [] and
 * {} are false). Missing paths read as null. Throws `ConditionEvaluationError`
 * (code `CONDITION_EVALUATION`) on a type error, e.g. `>` between a string and a number.
 */
export function evaluateCondition(compiled: CompiledCondition, context: ConditionContext): boolean {
  return compiled.evaluate(context);
}

/**
 * True when the condition reads `node:`; such a condition must be evaluated once per node
 * (with `context.node` set), any other once per task.
 */
export function referencesNode(compiled: CompiledCondition): boolean {
  return compiled.readsNode;
}

/**
 * Checks a condition's syntax for validators: null when it compiles, else an error diagnostic
 * with code `CONDITION_SYNTAX`, located by `where`.
 */
export function checkCondition(
  source: string,
  where: Pick<Diagnostic, 'file' | 'line' | 'path' | 'taskId'> = {},
): Diagnostic | null {
  try {
    compileCondition(source);
    return null;
  } catch (error) {
    if (!(error instanceof ConditionSyntaxError)) throw error;
    return {
      severity: 'error',
      code: error.code,
      message: `invalid condition ${JSON.stringify(source)}: ${error.message}`,
      ...where,
    };
  }
}

function hasRole(nodes: readonly NodeSpec[], role: string): boolean {
  return nodes.some((node) => Array.isArray(node.roles) && node.roles.includes(role));
}

function clusterNodesOf(context: ConditionContext): readonly NodeSpec[] {
  if (context.clusterNodes) return context.clusterNodes;
  const fromCluster = context.cluster.nodes;
  return Array.isArray(fromCluster) ? (fromCluster as NodeSpec[]) : context.nodes;
}

class Compiler {
  readsNode = false;

  constructor(private readonly source: string) {}

  private fail(message: string, column: number): never {
    throw new ConditionEvaluationError(message, this.source, column);
  }

  compile(ast: ConditionAst): Evaluator {
    switch (ast.kind) {
      case 'literal': {
        const value = ast.value;
        return () => value;
      }
      case 'list': {
        const items = ast.items.map((item) => this.compile(item));
        if (ast.items.every((item) => item.kind === 'literal')) {
          const constant = Object.freeze(items.map((item) => item({} as ConditionContext)));
          return () => constant;
        }
        return (context) => items.map((item) => item(context));
      }
      case 'reference':
        return this.reference(ast.namespace, ast.path);
      case 'api':
        return this.api(ast);
      case 'not': {
        const operand = this.compile(ast.operand);
        return (context) => !isTruthy(operand(context));
      }
      case 'negate': {
        const operand = this.compile(ast.operand);
        const column = ast.column;
        return (context) => {
          const value = operand(context);
          if (typeof value !== 'number')
            this.fail(`unary '-' at column ${column} needs a number, found ${describeValue(value)}`, column);
          return -value;
        };
      }
      case 'and': {
        const left = this.compile(ast.left);
        const right = this.compile(ast.right);
        return (context) => isTruthy(left(context)) && isTruthy(right(context));
      }
      case 'or': {
        const left = this.compile(ast.left);
        const right = this.compile(ast.right);
        return (context) => isTruthy(left(context)) || isTruthy(right(context));
      }
      case 'compare':
        return this.comparison(ast.operator, ast.column, this.compile(ast.left), this.compile(ast.right));
    }
  }

  private reference(namespace: string, path: readonly string[]): Evaluator {
    switch (namespace) {
      case 'cluster':
        return (context) => readOwnPath(context.cluster, path);
      case 'settings':
        return (context) => readOwnPath(context.cluster.settings, path);
      case 'release':
        return (context) => readOwnPath(context.release, path);
      default:
        this.readsNode = true;
        return (context) => readOwnPath(context.node, path);
    }
  }

  private api(ast: ConditionAst & { kind: 'api' }): Evaluator {
    const column = ast.column;
    const roleArgument = (name: string): ((context: ConditionContext) => string) => {
      const arg = this.compile(ast.args[0]);
      return (context) => {
        const role = arg(context);
        if (typeof role !== 'string') {
          this.fail(
            `'api.${name}' at column ${column} expects a role name (string), found ${describeValue(role)}`,
            column,
          );
        }
        return role;
      };
    };
    switch (ast.member) {
      case 'cluster_status':
        return (context) => readOwnPath(context.cluster, ['status']);
      case 'nodes_count':
        return (context) => context.nodes.length;
      case 'role_in_deployment': {
        const role = roleArgument(ast.member);
        return (context) => hasRole(context.nodes, role(context));
      }
      case 'role_in_cluster': {
        const role = roleArgument(ast.member);
        return (context) => hasRole(clusterNodesOf(context), role(context));
      }
    }
  }

  private comparison(operator: ComparisonOperator, column: number, left: Evaluator, right: Evaluator): Evaluator {
    switch (operator) {
      case '==':
        return (context) => valuesEqual(left(context), right(context));
      case '!=':
        return (context) => !valuesEqual(left(context), right(context));
      case 'in':
        return (context) => this.contains(left(context), right(context), column);
      case 'not in':
        return (context) => !this.contains(left(context), right(context), column);
      default:
        return (context) => this.order(operator, left(context), right(context), column);
    }
  }

  private order(operator: '<' | '<=' | '>' | '>=', a: ConditionValue, b: ConditionValue, column: number): boolean {
    const comparable =
      (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
    if (!comparable) {
      this.fail(
        `cannot compare ${describeValue(a)} with ${describeValue(b)} using '${operator}' at column ${column}: both sides must be numbers or both strings`,
        column,
      );
    }
    switch (operator) {
      case '<':
        return a < b;
      case '<=':
        return a <= b;
      case '>':
        return a > b;
      case '>=':
        return a >= b;
    }
  }

  private contains(needle: ConditionValue, haystack: ConditionValue, column: number): boolean {
    // A missing collection holds nothing: `'x' in settings:absent` is false, not an error.
    if (haystack === null) return false;
    if (Array.isArray(haystack)) return haystack.some((item) => valuesEqual(needle, item));
    if (typeof haystack === 'string' || typeof haystack === 'object') {
      if (typeof needle !== 'string') {
        const what = typeof haystack === 'string' ? 'a string' : 'an object';
        this.fail(
          `'in' at column ${column} needs a string on the left when the right is ${what}, found ${describeValue(needle)}`,
          column,
        );
      }
      return typeof haystack === 'string' ? haystack.includes(needle) : Object.hasOwn(haystack, needle);
    }
    return this.fail(
      `'in' at column ${column} needs a list, a string or an object on the right, found ${describeValue(haystack)}`,
      column,
    );
  }
}
