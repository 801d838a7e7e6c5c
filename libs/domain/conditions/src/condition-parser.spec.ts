import { ConditionSyntaxError } from './condition.errors';
import { parseCondition } from './condition-parser';
import type { ConditionAst } from './condition.types';

// Renders the tree fully parenthesised so precedence is visible in one string.
function show(ast: ConditionAst): string {
  switch (ast.kind) {
    case 'literal':
      return JSON.stringify(ast.value);
    case 'list':
      return `[${ast.items.map(show).join(', ')}]`;
    case 'reference':
      return `${ast.namespace}:${ast.path.join('.')}`;
    case 'api':
      return ast.member === 'cluster_status'
        ? `api.${ast.member}`
        : `api.${ast.member}(${ast.args.map(show).join(', ')})`;
    case 'not':
      return `(not ${show(ast.operand)})`;
    case 'negate':
      return `(- ${show(ast.operand)})`;
    case 'and':
    case 'or':
      return `(${show(ast.left)} ${ast.kind} ${show(ast.right)})`;
    case 'compare':
      return `(${show(ast.left)} ${ast.operator} ${show(ast.right)})`;
  }
}

const parsed = (source: string): string => show(parseCondition(source));

function syntaxError(source: string): ConditionSyntaxError {
  try {
    parseCondition(source);
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return error;
    throw error;
  }
  throw new Error(`expected ${source} to be rejected`);
}

describe('parseCondition - precedence', () => {
  it.each([
    ['a and b or c', 'cluster:a and cluster:b or cluster:c', '((cluster:a and cluster:b) or cluster:c)'],
    ['or under and', 'cluster:a or cluster:b and cluster:c', '(cluster:a or (cluster:b and cluster:c))'],
    ['and is left-associative', 'cluster:a and cluster:b and cluster:c', '((cluster:a and cluster:b) and cluster:c)'],
    ['or is left-associative', 'cluster:a or cluster:b or cluster:c', '((cluster:a or cluster:b) or cluster:c)'],
    [
      'comparison binds tighter than and',
      "cluster:a == 1 and cluster:b != 'x'",
      '((cluster:a == 1) and (cluster:b != "x"))',
    ],
    ['not binds tighter than comparison (Fuel)', 'not cluster:a == true', '((not cluster:a) == true)'],
    ['not binds tighter than and', 'not cluster:a and cluster:b', '((not cluster:a) and cluster:b)'],
    ['parentheses override', 'not (cluster:a == true)', '(not (cluster:a == true))'],
    ['parentheses group or', '(cluster:a or cluster:b) and cluster:c', '((cluster:a or cluster:b) and cluster:c)'],
    ['symbolic operators', '!cluster:a && cluster:b || cluster:c', '(((not cluster:a) and cluster:b) or cluster:c)'],
    ['double not', 'not not cluster:a', '(not (not cluster:a))'],
    ['in at comparison level', "'x' in settings:foo.bar.value and true", '(("x" in settings:foo.bar.value) and true)'],
    ['not in', "'x' not in [1, 'y']", '("x" not in [1, "y"])'],
    [
      'ordering operators',
      'api.nodes_count() >= 3 or api.nodes_count() < -1.5',
      '((api.nodes_count() >= 3) or (api.nodes_count() < -1.5))',
    ],
    ['unary minus on a reference', '-cluster:n <= 0', '((- cluster:n) <= 0)'],
    ['operand of comparison may be negated', 'cluster:a == not cluster:b', '(cluster:a == (not cluster:b))'],
    ['explicit parenthesised chain', '(cluster:a == 1) == true', '((cluster:a == 1) == true)'],
  ])('%s', (_name, source, expected) => {
    expect(parsed(source)).toBe(expected);
  });
});

describe('parseCondition - literals and references', () => {
  it('reads strings in both quotes with escapes', () => {
    const ast = parseCondition(String.raw`'it\'s' == "say \"hi\"\n\t\\"`);
    expect(ast).toMatchObject({ left: { value: "it's" }, right: { value: 'say "hi"\n\t\\' } });
  });

  it('reads integers and floats', () => {
    expect(parsed('[0, 42, 3.25, -7]')).toBe('[0, 42, 3.25, -7]');
  });

  it('reads true, false, null and empty lists', () => {
    expect(parsed('[true, false, null, []]')).toBe('[true, false, null, []]');
  });

  it('splits reference paths on dots and keeps hyphenated keys', () => {
    expect(parseCondition('settings:fuel-plugin.metadata.enabled')).toMatchObject({
      kind: 'reference',
      namespace: 'settings',
      path: ['fuel-plugin', 'metadata', 'enabled'],
    });
  });

  it('reads every namespace and api member', () => {
    expect(
      parsed(
        "[cluster:status, settings:a.b, release:version, node:roles, api.cluster_status, api.role_in_deployment('ceph-osd'), api.role_in_cluster('zabbix-server'), api.nodes_count()]",
      ),
    ).toBe(
      '[cluster:status, settings:a.b, release:version, node:roles, api.cluster_status, api.role_in_deployment("ceph-osd"), api.role_in_cluster("zabbix-server"), api.nodes_count()]',
    );
  });

  it('records 1-based columns', () => {
    expect(parseCondition("cluster:status  ==  'new'")).toMatchObject({
      column: 17,
      left: { column: 1 },
      right: { column: 21 },
    });
  });
});

describe('parseCondition - syntax errors', () => {
  it.each([
    ['missing operand before )', '(cluster:status == )', "unexpected ')' at column 20: expected an operand"],
    ['the brief example', 'api.nodes_count() > ) and true', "unexpected ')' at column 21: expected an operand"],
    ['end of input', 'api.cluster_status ==', 'unexpected end of expression at column 22: expected an operand'],
    ['empty condition', '   ', 'condition is empty'],
    [
      'unknown function',
      "api.role_in_deploy('x')",
      "unknown function 'api.role_in_deploy' at column 1 (known: role_in_deployment, role_in_cluster, nodes_count)",
    ],
    [
      'unknown api property',
      "true and api.cluster_state == 'new'",
      "unknown api property 'api.cluster_state' at column 10 (known: cluster_status)",
    ],
    [
      'property called as function',
      'api.cluster_status()',
      "'api.cluster_status' at column 1 is not a function: write api.cluster_status without parentheses",
    ],
    [
      'function used without call',
      'api.nodes_count > 1',
      "'api.nodes_count' at column 1 is a function: call it as api.nodes_count()",
    ],
    [
      'role function used without call',
      'api.role_in_cluster',
      "'api.role_in_cluster' at column 1 is a function: call it as api.role_in_cluster('<role>')",
    ],
    [
      'wrong argument count',
      'api.role_in_deployment()',
      "'api.role_in_deployment' at column 1 takes 1 argument, found 0",
    ],
    ['too many arguments', "api.nodes_count('x')", "'api.nodes_count' at column 1 takes 0 arguments, found 1"],
    ['bare api', 'api == 1', "unexpected '==' at column 5: expected '.' after 'api'"],
    ['api dot without member', 'api.(', "unexpected '(' at column 5: expected an api member name after 'api.'"],
    [
      'unknown namespace',
      'foo:bar == 1',
      "unknown namespace 'foo:' in 'foo:bar' at column 1 (known: cluster, settings, release, node)",
    ],
    ['namespace without path', 'settings: == 1', "unexpected ' ' at column 10: expected a path after 'settings:'"],
    ['trailing dot in path', 'settings:a. == 1', "unexpected ' ' at column 12: expected a key after '.'"],
    [
      'unterminated single-quoted string',
      "cluster:status == 'new",
      "unterminated string at column 19: expected a closing ' before the end of the expression",
    ],
    [
      'unterminated double-quoted string',
      'cluster:status == "new',
      'unterminated string at column 19: expected a closing " before the end of the expression',
    ],
    ['unknown escape', String.raw`'a\qb'`, String.raw`unknown escape '\q' at column 3 (known: \\ \' \" \n \t \r)`],
    [
      'trailing tokens',
      'api.nodes_count() > 1 2',
      'unexpected number 2 at column 23: expected an operator or the end of the expression',
    ],
    [
      'trailing string',
      "cluster:status == 'new' 'x'",
      "unexpected string 'x' at column 25: expected an operator or the end of the expression",
    ],
    [
      'stray closing parenthesis',
      'true)',
      "unexpected ')' at column 5: expected an operator or the end of the expression",
    ],
    [
      'unclosed parenthesis',
      '(true and false',
      "unexpected end of expression at column 16: expected ')' to close '(' at column 1",
    ],
    [
      'unclosed list',
      "'a' in ['a' 'b']",
      "unexpected string 'b' at column 13: expected ',' or ']' to close '[' at column 8",
    ],
    [
      'unclosed call',
      "api.role_in_cluster('a' 'b')",
      "unexpected string 'b' at column 25: expected ',' or ')' to close '(' at column 20",
    ],
    ['single =', "cluster:status = 'new'", "unexpected '=' at column 16: use '==' to compare"],
    ['single &', 'true & false', "unexpected '&' at column 6: use '&&' or 'and'"],
    ['single |', 'true | false', "unexpected '|' at column 6: use '||' or 'or'"],
    ['unknown character', 'true ; false', "unexpected character ';' at column 6"],
    [
      'unknown name',
      'ceph == true',
      "unknown name 'ceph' at column 1: expected a literal, a reference such as cluster:status or settings:<path>, or api.<member>",
    ],
    [
      'python capitalised literal',
      'True',
      "unknown name 'True' at column 1: expected a literal, a reference such as cluster:status or settings:<path>, or api.<member>",
    ],
    ['keyword as operand', 'true and or false', "unexpected 'or' at column 10: expected an operand"],
    [
      'chained comparison',
      'api.nodes_count() > 1 < 5',
      "unexpected '<' at column 23: comparisons cannot be chained; use 'and' or parentheses",
    ],
    [
      'not without in',
      "'a' not [1]",
      "unexpected 'not' at column 5: expected an operator or the end of the expression",
    ],
    ['malformed float', 'cluster:a == 1.', "malformed number '1.' at column 14: expected a digit after '.'"],
    ['number glued to a name', 'cluster:a == 10gb', "malformed number '10gb' at column 14"],
  ])('%s', (_name, source, message) => {
    const error = syntaxError(source);
    expect(error.message).toBe(message);
    expect(error.code).toBe('CONDITION_SYNTAX');
    expect(error.source).toBe(source);
  });

  it('reports the column of the offending token on the error object', () => {
    expect(syntaxError('(cluster:status == )').column).toBe(20);
  });
});
