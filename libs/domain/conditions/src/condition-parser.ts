import { ConditionSyntaxError } from './condition.errors';
import { describeToken, tokenize, type Token } from './condition-lexer';
import type { ApiMember, ComparisonOperator, ConditionAst } from './condition.types';

/** Argument count of each `api` function. */
export const API_FUNCTIONS: Readonly<Record<string, number>> = {
  role_in_deployment: 1,
  role_in_cluster: 1,
  nodes_count: 0,
};
/** Properties of the `api` object (read without parentheses). */
export const API_PROPERTIES: readonly string[] = ['cluster_status'];

// Binding powers, loosest first. `not` binds tighter than comparisons, as in Fuel's expression
// language: `not a == b` is `(not a) == b`.
const BP_OR = 1;
const BP_AND = 2;
const BP_COMPARE = 3;

const COMPARISONS: ReadonlySet<string> = new Set(['==', '!=', '<', '<=', '>', '>=']);

/** Parses a condition into an AST; throws `ConditionSyntaxError` on the first problem. */
export function parseCondition(source: string): ConditionAst {
  if (source.trim() === '') throw new ConditionSyntaxError('condition is empty', source, 1);
  return new Parser(source, tokenize(source)).parseAll();
}

interface Infix {
  bp: number;
  width: number;
  kind: 'and' | 'or' | ComparisonOperator;
}

class Parser {
  private pos = 0;

  constructor(
    private readonly source: string,
    private readonly tokens: Token[],
  ) {}

  parseAll(): ConditionAst {
    const ast = this.expression(0);
    const next = this.peek();
    if (next.type !== 'end') this.unexpected(next, 'an operator or the end of the expression');
    return ast;
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.pos + offset, this.tokens.length - 1)];
  }

  private next(): Token {
    const token = this.peek();
    this.pos++;
    return token;
  }

  private fail(message: string, column: number): never {
    throw new ConditionSyntaxError(message, this.source, column);
  }

  private unexpected(token: Token, expected: string): never {
    this.fail(`unexpected ${describeToken(token)} at column ${token.column}: expected ${expected}`, token.column);
  }

  private isPunct(token: Token, value: string): boolean {
    return token.type === 'punct' && token.value === value;
  }

  private isName(token: Token, value: string): boolean {
    return token.type === 'name' && token.value === value;
  }

  private infix(): Infix | null {
    const t = this.peek();
    if (this.isName(t, 'or') || this.isPunct(t, '||')) return { bp: BP_OR, width: 1, kind: 'or' };
    if (this.isName(t, 'and') || this.isPunct(t, '&&')) return { bp: BP_AND, width: 1, kind: 'and' };
    if (t.type === 'punct' && COMPARISONS.has(t.value))
      return { bp: BP_COMPARE, width: 1, kind: t.value as ComparisonOperator };
    if (this.isName(t, 'in')) return { bp: BP_COMPARE, width: 1, kind: 'in' };
    if (this.isName(t, 'not') && this.isName(this.peek(1), 'in')) return { bp: BP_COMPARE, width: 2, kind: 'not in' };
    return null;
  }

  private expression(rbp: number): ConditionAst {
    let left = this.prefix();
    for (let op = this.infix(); op !== null && op.bp > rbp; op = this.infix()) {
      const column = this.peek().column;
      this.pos += op.width;
      const right = this.expression(op.bp);
      if (op.kind === 'and' || op.kind === 'or') {
        left = { kind: op.kind, column, left, right };
        continue;
      }
      left = { kind: 'compare', column, operator: op.kind, left, right };
      const after = this.infix();
      if (after !== null && after.bp === BP_COMPARE) {
        const t = this.peek();
        this.fail(
          `unexpected ${describeToken(t)} at column ${t.column}: comparisons cannot be chained; use 'and' or parentheses`,
          t.column,
        );
      }
    }
    return left;
  }

  private prefix(): ConditionAst {
    const t = this.next();
    switch (t.type) {
      case 'string':
      case 'number':
        return { kind: 'literal', column: t.column, value: t.value };
      case 'reference':
        return { kind: 'reference', column: t.column, namespace: t.namespace, path: t.path };
      case 'end':
        return this.unexpected(t, 'an operand');
      case 'punct':
        return this.prefixPunct(t);
      case 'name':
        return this.prefixName(t);
    }
  }

  private prefixPunct(t: Token & { type: 'punct' }): ConditionAst {
    switch (t.value) {
      case '(': {
        const inner = this.expression(0);
        const close = this.next();
        if (!this.isPunct(close, ')')) this.unexpected(close, `')' to close '(' at column ${t.column}`);
        return inner;
      }
      case '[':
        return this.list(t);
      case '!':
        return { kind: 'not', column: t.column, operand: this.expression(BP_COMPARE) };
      case '-': {
        const operand = this.expression(BP_COMPARE);
        if (operand.kind === 'literal' && typeof operand.value === 'number') {
          return { kind: 'literal', column: t.column, value: -operand.value };
        }
        return { kind: 'negate', column: t.column, operand };
      }
      default:
        return this.unexpected(t, 'an operand');
    }
  }

  private prefixName(t: Token & { type: 'name' }): ConditionAst {
    switch (t.value) {
      case 'true':
        return { kind: 'literal', column: t.column, value: true };
      case 'false':
        return { kind: 'literal', column: t.column, value: false };
      case 'null':
        return { kind: 'literal', column: t.column, value: null };
      case 'not':
        return { kind: 'not', column: t.column, operand: this.expression(BP_COMPARE) };
      case 'api':
        return this.api(t);
      case 'and':
      case 'or':
      case 'in':
        return this.unexpected(t, 'an operand');
      default:
        return this.fail(
          `unknown name '${t.value}' at column ${t.column}: expected a literal, a reference such as cluster:status or settings:<path>, or api.<member>`,
          t.column,
        );
    }
  }

  private list(open: Token): ConditionAst {
    const items: ConditionAst[] = [];
    if (this.isPunct(this.peek(), ']')) {
      this.pos++;
      return { kind: 'list', column: open.column, items };
    }
    for (;;) {
      items.push(this.expression(0));
      const sep = this.next();
      if (this.isPunct(sep, ']')) return { kind: 'list', column: open.column, items };
      if (!this.isPunct(sep, ',')) this.unexpected(sep, `',' or ']' to close '[' at column ${open.column}`);
    }
  }

  private api(t: Token): ConditionAst {
    const dot = this.next();
    if (!this.isPunct(dot, '.')) this.unexpected(dot, "'.' after 'api'");
    const member = this.next();
    if (member.type !== 'name') this.unexpected(member, "an api member name after 'api.'");
    const name = `api.${member.value}`;
    const isCall = this.isPunct(this.peek(), '(');
    const arity = Object.hasOwn(API_FUNCTIONS, member.value) ? API_FUNCTIONS[member.value] : undefined;
    if (!isCall) {
      if (arity !== undefined) {
        const example = arity === 0 ? '()' : "('<role>')";
        this.fail(`'${name}' at column ${t.column} is a function: call it as ${name}${example}`, t.column);
      }
      if (!API_PROPERTIES.includes(member.value)) {
        this.fail(
          `unknown api property '${name}' at column ${t.column} (known: ${API_PROPERTIES.join(', ')})`,
          t.column,
        );
      }
      return { kind: 'api', column: t.column, member: member.value as ApiMember, args: [] };
    }
    if (arity === undefined) {
      if (API_PROPERTIES.includes(member.value)) {
        this.fail(`'${name}' at column ${t.column} is not a function: write ${name} without parentheses`, t.column);
      }
      const known = Object.keys(API_FUNCTIONS).join(', ');
      this.fail(`unknown function '${name}' at column ${t.column} (known: ${known})`, t.column);
    }
    const open = this.next();
    const args: ConditionAst[] = [];
    if (this.isPunct(this.peek(), ')')) {
      this.pos++;
    } else {
      for (;;) {
        args.push(this.expression(0));
        const sep = this.next();
        if (this.isPunct(sep, ')')) break;
        if (!this.isPunct(sep, ',')) this.unexpected(sep, `',' or ')' to close '(' at column ${open.column}`);
      }
    }
    if (args.length !== arity) {
      const plural = arity === 1 ? 'argument' : 'arguments';
      this.fail(`'${name}' at column ${t.column} takes ${arity} ${plural}, found ${args.length}`, t.column);
    }
    return { kind: 'api', column: t.column, member: member.value as ApiMember, args };
  }
}
