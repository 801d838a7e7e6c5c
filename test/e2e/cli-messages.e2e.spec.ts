// One message style (docs/messages.md): every command's error paths, run as an operator runs them
// against a whole stack, print `error: WHERE: WHAT` lines with each path once, no raw system
// error codes or stack traces, and at most one summary.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { GRANULE_VERSION } from '@granule/core';
import { type CliResult, E2eStack, REPO_ROOT } from './stack';

interface Case {
  args: string[];
  code: 1 | 2;
  /** Lines the output must hold (stderr, or stdout for a report), in any order; a RegExp matches one line. */
  says?: (string | RegExp)[];
  /** The command prints a report on stdout (validate): its summary is the one line that ends it. */
  report?: boolean;
  /** What a failing command may still print on stdout as its result (a refused run's id). */
  result?: RegExp;
}

const STRATEGY = 'examples/strategies/deployment-strategy.yaml';
const STRATEGY_NODES = 'examples/strategies/nodes.yaml';

/**
 * Every leaf command of the CLI (`plugin validate`, `watch`, ...), walked as its help spec walks
 * them, from the built CLI this spec runs (an app is not imported by path).
 */
function leafCommands(): string[] {
  const { buildProgram } = require(path.join(REPO_ROOT, 'dist/apps/cli/src/program.js')) as {
    buildProgram: () => Command;
  };
  const leaves: string[] = [];
  const visit = (cmd: Command, prefix: string[]): void => {
    if (cmd.commands.length === 0 && prefix.length > 0) leaves.push(prefix.join(' '));
    for (const sub of cmd.commands) visit(sub, [...prefix, sub.name()]);
  };
  visit(buildProgram(), []);
  return leaves;
}

/** The leaf command a command line runs: its longest prefix that is one. */
function leafOf(args: string[], leaves: readonly string[]): string | undefined {
  for (let n = Math.min(args.length, 3); n > 0; n--) {
    const name = args.slice(0, n).join(' ');
    if (leaves.includes(name)) return name;
  }
  return undefined;
}

/** The style rules every failing command keeps; returns the broken ones. */
function styleProblems(args: string[], r: CliResult, c: Case): string[] {
  const problems: string[] = [];
  const out = `${r.stdout}${r.stderr}`;
  const stderr = r.stderr.split('\n').filter(Boolean);
  for (const line of stderr)
    if (!/^(error|warning): \S/.test(line) && line !== '(run with --help for usage)')
      problems.push(`stderr line not "error: ..." / "warning: ...": ${line}`);
  if (/\b(ENOENT|EACCES|EISDIR|ENOTDIR|EPERM|ECONNREFUSED)\b/.test(out)) problems.push('a raw system error code');
  if (/^\s+at /m.test(out) || /internal error/.test(out)) problems.push('a stack trace or an internal error');
  // Each path or name the operator typed is named once; a command the message suggests may repeat it.
  const named = args.filter((a, i) => !a.startsWith('-') && a.length >= 3 && !(i < 2 && /^[a-z]+$/.test(a)));
  for (const p of named)
    for (const line of out.split('\n')) {
      const said = line.replace(/'granule [^']*'/g, '');
      const escaped = p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      if ((said.match(new RegExp(`(^|[^\\w/.-])${escaped}(?![\\w/-])`, 'g')) ?? []).length > 1)
        problems.push(`${p} named twice in: ${line}`);
    }
  const lines = out.split('\n').filter(Boolean);
  const repeated = lines.filter((l, i) => lines.indexOf(l) !== i);
  if (repeated.length > 0) problems.push(`a line said twice: ${repeated[0]}`);
  const summaries = lines.filter((l) => /: (in)?valid \(\d+ errors?/.test(l));
  if (summaries.length > (c.report ? 1 : 0)) problems.push(`summaries: ${summaries.join(' | ')}`);
  if (/ is invalid\b/.test(r.stderr)) problems.push('the verdict restated on stderr');
  if (!c.report && r.stdout !== '' && !c.result?.test(r.stdout))
    problems.push(`output on stdout for a failure: ${r.stdout.slice(0, 200)}`);
  if (c.report && r.stderr !== '') problems.push(`the report's command wrote to stderr: ${r.stderr.slice(0, 200)}`);
  return problems;
}

// Each test starts real processes (the service, the CLI): seconds each on a busy machine.
jest.setTimeout(60_000);

describe('CLI messages - every command, its error paths, one style', () => {
  let stack: E2eStack;
  let dir: string;
  const at = (name: string): string => path.join(dir, name);
  const cases: Case[] = [];

  beforeAll(async () => {
    stack = await E2eStack.start({ name: 'cli_messages', agents: [] });
    await stack.service('config-store').start();
    dir = mkdtempSync(path.join(os.tmpdir(), 'granule-cli-messages-'));
    const write = (name: string, text: string): void => {
      mkdirSync(path.dirname(at(name)), { recursive: true });
      writeFileSync(at(name), text);
    };
    write('tasks.yaml', '- {id: a, type: shell, roles: ["*"], parameters: {cmd: "true"}}\n');
    write('nodes.yaml', 'nodes: [{uid: n1, roles: [x]}]\n');
    write('broken.yaml', 'nodes:\n  - uid: [n1\n');
    write('hosts.yaml', 'hosts: [n1]\n');
    write(
      'cycle.yaml',
      '- {id: a, type: shell, roles: ["*"], requires: [b], parameters: {cmd: "true"}}\n' +
        '- {id: b, type: shell, roles: ["*"], requires: [a], parameters: {cmd: "true"}}\n',
    );
    write('durations.yaml', 'aa: 3\n');
    write(
      'strategy.yaml',
      'groups:\n' +
        '  - {name: first, critical: true, depends_on: [], selectors: [{node_tags: [x]}]}\n' +
        '  - {name: second, critical: false, depends_on: [frist], selectors: [{node_tags: [x]}]}\n',
    );
    write('plugin/metadata.yaml', 'name: half\ndescription: no title, version or package_version\nreleases: []\n');
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  // Offline commands.
  cases.push(
    {
      args: ['plan', '--tasks', 'nope.yaml', '--nodes', '@/nodes.yaml'],
      code: 1,
      says: ['error: nope.yaml: no such file or directory'],
    },
    {
      args: ['plan', '--tasks', '@/tasks.yaml', '--nodes', '@/broken.yaml'],
      code: 1,
      says: [/^error: \S+broken\.yaml:\d+: YAML syntax error: /],
    },
    {
      args: ['plan', '--tasks', '@/tasks.yaml', '--nodes', '@/hosts.yaml'],
      code: 1,
      says: [/^error: \S+hosts\.yaml:1: expected a 'nodes' list .* got a mapping with keys hosts$/],
    },
    {
      args: ['plan', '--tasks', '@/cycle.yaml', '--nodes', '@/nodes.yaml'],
      code: 1,
      says: [
        /^error: \S+cycle\.yaml:[12]: dependency cycle \(each runs before the next\): \w@n1 \(line [12]\) -> \w@n1 \(line [12]\) -> \w@n1$/,
      ],
    },
    {
      args: [
        'plan',
        '--tasks',
        '@/tasks.yaml',
        '--nodes',
        '@/nodes.yaml',
        '--simulate',
        '--durations',
        '@/durations.yaml',
      ],
      code: 1,
      says: [/^error: \S+durations\.yaml:1: aa: no task of the planned graph has this id \(did you mean 'a'\?\)$/],
    },
    { args: ['plan', '--tasks', '@/tasks.yaml', '--nodes', '@/nodes.yaml', '-o', 'xml'], code: 2 },
    { args: ['plan', '--tasks', '@/tasks.yaml'], code: 2 },
    { args: ['plugin', 'validate', 'nope'], code: 1, says: ['error: nope: no such file or directory'] },
    {
      args: ['plugin', 'validate', '@/plugin'],
      code: 1,
      report: true,
      says: [
        /^error: \S+plugin\/metadata\.yaml:1: missing required field 'title'$/,
        /^\S+plugin: invalid \(\d+ errors, /,
      ],
    },
    { args: ['plugin', 'load', 'nope'], code: 1 },
    { args: ['plugin', 'build', 'nope'], code: 1 },
    { args: ['plugin', 'create', 'Bad Name', '--dir', '@/'], code: 1 },
    { args: ['strategy', 'validate', 'nope.yaml'], code: 1, says: ['error: nope.yaml: no such file or directory'] },
    {
      args: ['strategy', 'validate', '@/strategy.yaml'],
      code: 1,
      report: true,
      says: [
        /unknown group 'frist' \(the groups are first, second\)$/,
        /^\S+strategy\.yaml: invalid \(1 error, 0 warnings\)$/,
      ],
    },
    {
      args: ['strategy', 'validate', '@/broken.yaml'],
      code: 1,
      report: true,
      says: [/^error: \S+broken\.yaml:\d+: YAML syntax error: /],
    },
    { args: ['strategy', 'plan', STRATEGY, '--nodes', 'nope.yaml'], code: 1 },
    { args: ['strategy', 'simulate', STRATEGY, '--nodes', STRATEGY_NODES, '--fail-deploy', 'zz'], code: 2 },
    {
      args: ['tasks', 'upload', '--release', '1', '--dir', '@/nowhere'],
      code: 1,
      says: [/^error: \S+nowhere\/deployment_tasks\.yaml: no such file or directory$/],
    },
    { args: ['tasks', 'download'], code: 2 },
    { args: ['deploy'], code: 2 },
    { args: ['deploy', '--tasks', 'nope.yaml', '--nodes', '@/nodes.yaml'], code: 1 },
    { args: ['deploy', '--tasks', '@/tasks.yaml', '--nodes', '@/nodes.yaml', '--plugin', '@/plugin'], code: 1 },
    { args: ['auth', 'issue', 'alice', '--role', 'boss', '--auth-dir', '@/auth'], code: 2 },
    { args: ['agent', 'enroll', 'n1', '--auth-dir', '@/nowhere'], code: 1 },
    { args: ['graph'], code: 2 },
    { args: ['runs', 'show', 'r1', '--at', 'zero'], code: 2 },
    { args: ['retry', 'r1', '--failed-only', '--all-unfinished'], code: 2 },
    {
      args: ['completion', 'fish'],
      code: 2,
      says: ['error: completion: expected a shell, one of bash, zsh, got "fish"'],
    },
    { args: ['secrets', 'keygen', '-o', 'xml'], code: 2, says: ['error: -o xml: expected one of text, json, yaml'] },
    { args: ['secrets', 'seal', '-o', 'xml'], code: 2, says: ['error: -o xml: expected one of json, yaml'] },
    {
      args: ['auth', 'init', '@/tasks.yaml/auth'],
      code: 1,
      says: [/^error: \S+tasks\.yaml\/auth: a part of the path is not a folder$/],
    },
    {
      args: ['auth', 'list', '--auth-dir', '@/nowhere'],
      code: 1,
      says: [/^error: no trust store in \S+nowhere: create one with 'granule auth init \S+nowhere'$/],
    },
    { args: ['agent', 'revoke', 'n1', '--auth-dir', '@/nowhere', '--no-record'], code: 1 },
    { args: ['agent', 'record', 'n1', '--auth-dir', '@/nowhere'], code: 1 },
    {
      args: ['agent', 'package', '--out', '@/tasks.yaml/agent.tar.gz'],
      code: 1,
      says: [
        /^error: --out \S+tasks\.yaml\/agent\.tar\.gz: cannot write the package there: a part of the path is a file, not a folder$/,
      ],
    },
    {
      args: ['logs', 'r1', '--attempt', 'zero'],
      code: 2,
      says: ['error: --attempt zero: expected a try number (1 for the first, 2 for the first retry, ...)'],
    },
  );
  // config-store.
  cases.push(
    { args: ['release', 'show', 'nope'], code: 1 },
    { args: ['release', 'install', 'nope'], code: 1, says: ['error: nope: no such file or directory'] },
    { args: ['release', 'remove', 'nope'], code: 1 },
    { args: ['plugin', 'install', 'nope'], code: 1, says: ['error: nope: no such file or directory'] },
    {
      args: ['plugin', 'install', '@/plugin'],
      code: 1,
      says: [/^error: \S+plugin\/metadata\.yaml:1: missing required field 'title'$/],
    },
    { args: ['plugin', 'show', 'nope'], code: 1 },
    { args: ['plugin', 'enable', 'nope', '--env', 'nope'], code: 1 },
    { args: ['plugin', 'remove', 'nope'], code: 1 },
    { args: ['env', 'create', 'e1', '--release', 'nope'], code: 1 },
    { args: ['env', 'show', 'nope'], code: 1 },
    { args: ['env', 'set', 'nope'], code: 2 },
    { args: ['node', 'add', 'n1'], code: 2 },
    { args: ['node', 'show', 'nope'], code: 1 },
    { args: ['node', 'label', 'n1', 'bad'], code: 2 },
    { args: ['node', 'remove', 'nope'], code: 1 },
    // A change's output format is checked before the change is made.
    {
      args: ['node', 'tag', 'nope', 'web', '-o', 'xml'],
      code: 2,
      says: ['error: -o xml: expected one of json, yaml, table'],
    },
    { args: ['node', 'tag', 'nope', 'web'], code: 1 },
    { args: ['node', 'rack', 'nope', 'r1'], code: 1 },
    { args: ['node', 'assign', 'nope', '--env', 'nope', '--roles', 'x'], code: 1 },
    { args: ['node', 'list', '-o', 'xml'], code: 2, says: ['error: -o xml: expected one of json, yaml, table'] },
    { args: ['env', 'list', '-o', 'xml'], code: 2, says: ['error: -o xml: expected one of json, yaml, table'] },
    { args: ['plugin', 'list', '-o', 'xml'], code: 2, says: ['error: -o xml: expected one of json, yaml, table'] },
    { args: ['plugin', 'disable', 'nope', '--env', 'nope'], code: 1 },
    { args: ['release', 'list', '-o', 'xml'], code: 2, says: ['error: -o xml: expected one of json, yaml, table'] },
    { args: ['strategy', 'list', '-o', 'xml'], code: 2, says: ['error: -o xml: expected one of json, yaml, table'] },
    {
      args: ['audit', 'list', '--limit', '0'],
      code: 2,
      says: ['error: --limit 0: expected a whole number from 1 to 1000'],
    },
    { args: ['strategy', 'upload', 'nope.yaml'], code: 1, says: ['error: nope.yaml: no such file or directory'] },
    { args: ['strategy', 'show', 'nope'], code: 1 },
    { args: ['strategy', 'remove', 'nope'], code: 1 },
  );
  // Orchestrator and graph-planner.
  cases.push(
    {
      args: ['runs', 'list', '--limit', 'zero'],
      code: 2,
      says: ['error: --limit zero: expected a whole number from 1 to 1000'],
    },
    { args: ['runs', 'list', '--status', 'weird'], code: 2 },
    { args: ['watch', 'r1', '-o', 'xml'], code: 2, says: ['error: -o xml: expected one of text, json, yaml'] },
    { args: ['runs', 'show', 'nope'], code: 1 },
    { args: ['runs', 'events', 'nope'], code: 1 },
    { args: ['runs', 'tasks', 'nope'], code: 1 },
    {
      args: ['runs', 'tasks', 'nope', '--status', 'broken'],
      code: 1,
      says: [/^error: status: expected one of pending, dispatched, running, .*, got "broken"$/],
    },
    { args: ['logs', 'nope'], code: 1, says: ['error: run nope does not exist (granule runs list shows the runs)'] },
    { args: ['logs', 'nope', '--follow'], code: 1 },
    { args: ['stop', 'nope'], code: 1, says: ['error: run nope does not exist (granule runs list shows the runs)'] },
    { args: ['resume', 'nope'], code: 1, says: ['error: run nope does not exist (granule runs list shows the runs)'] },
    { args: ['retry', 'nope'], code: 1, says: ['error: run nope does not exist (granule runs list shows the runs)'] },
    {
      args: ['retry', 'nope', '--run-id', 'bad id'],
      code: 2,
      says: [
        `error: --run-id: expected a run id of 1 to 64 letters, digits, '_' or '-', starting with a letter or digit, got "bad id"`,
      ],
    },
    {
      args: ['deploy', '--env', 'demo', '--run-id', 'bad id'],
      code: 2,
      says: [
        `error: --run-id: expected a run id of 1 to 64 letters, digits, '_' or '-', starting with a letter or digit, got "bad id"`,
      ],
    },
    { args: ['graph', '--run', 'nope'], code: 1 },
    // The run was recorded (refused): its id is the command's result, the refusal its error.
    {
      args: ['deploy', '--env', 'nope'],
      code: 1,
      result: /^[\w-]+\n$/,
      says: [/^error: run [\w-]+ was refused: environment 'nope' does not exist$/],
    },
  );

  it('every leaf command has an error-path case', () => {
    const leaves = leafCommands();
    expect(leaves).toEqual(expect.arrayContaining(['plan', 'watch', 'runs list', 'secrets seal', 'completion']));
    const covered = new Set(cases.map((c) => leafOf(c.args, leaves)));
    expect(leaves.filter((leaf) => !covered.has(leaf))).toEqual([]);
  });

  it.each(cases.map((c) => [c.args.join(' '), c] as const))('granule %s', async (_name, c) => {
    const args = c.args.map((a) => (a.startsWith('@/') ? at(a.slice(2)) : a));
    const r = await stack.granule(args);
    const shown = { args: args.join(' '), code: r.code, stdout: r.stdout, stderr: r.stderr };
    expect({ ...shown, problems: styleProblems(args, r, c) }).toEqual({
      ...shown,
      code: c.code,
      problems: [],
    });
    const lines = (c.report ? r.stdout : r.stderr).split('\n');
    const wanted = (c.says ?? []).map((w) => (typeof w === 'string' ? w : expect.stringMatching(w)));
    expect(lines).toEqual(expect.arrayContaining(wanted));
  });

  it('under -o json every error is one JSON object on stderr, with the same exit codes', async () => {
    const json = async (args: string[]) => {
      const r = await stack.granule(args);
      return { code: r.code, stdout: r.stdout, error: (JSON.parse(r.stderr) as { error: unknown }).error };
    };
    // Invalid input (exit 1): the findings as data, each naming where.
    expect(await json(['plan', '--tasks', at('nope.yaml'), '--nodes', at('nodes.yaml'), '-o', 'json'])).toEqual({
      code: 1,
      stdout: '',
      error: {
        code: 'INVALID_INPUT',
        message: `${at('nope.yaml')}: no such file or directory`,
        diagnostics: [expect.objectContaining({ severity: 'error', file: at('nope.yaml') })],
      },
    });
    // A usage error (exit 2), commander's text not printed besides.
    expect(await json(['runs', 'show', 'r1', '--at', 'zero', '-o', 'json'])).toEqual({
      code: 2,
      stdout: '',
      error: { code: 'USAGE', message: expect.stringContaining('--at') },
    });
    // A service's refusal (exit 1) keeps the service's code.
    expect(await json(['runs', 'show', 'nope', '--output=json'])).toEqual({
      code: 1,
      stdout: '',
      error: { code: 'RUN_UNKNOWN', message: 'run nope does not exist (granule runs list shows the runs)' },
    });
  });

  it('granule --version prints the version', async () => {
    const r = await stack.granule(['--version']);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, `${GRANULE_VERSION}\n`, '']);
  });

  it("tables - node list names each node's environment; json keeps the id", async () => {
    const ok = async (args: string[]): Promise<CliResult> => {
      const r = await stack.granule(args);
      stack.assertExitedOk(r, `granule ${args.join(' ')}`);
      return r;
    };
    await ok(['release', 'install', 'examples/releases/example-release']);
    await ok(['env', 'create', 'tables']);
    await ok(['node', 'add', 'n7', '--hostname', 'h7', '--env', 'tables']);
    const table = (await ok(['node', 'list'])).stdout.split('\n');
    const column = table[0].indexOf('ENVIRONMENT');
    expect(column).toBeGreaterThan(0);
    expect(table[1].slice(column).split(/\s+/)[0]).toBe('tables');
    const json = JSON.parse((await ok(['node', 'list', '-o', 'json'])).stdout) as { environment: unknown }[];
    expect(typeof json[0].environment).toBe('number');
  });

  it('node assign - a role the environment does not define is refused, naming the roles it defines', async () => {
    // The example release defines controller, compute and storage (the test above may have installed it).
    await stack.granule(['release', 'install', 'examples/releases/example-release']);
    stack.assertExitedOk(await stack.granule(['env', 'create', 'roles']), 'env create roles');
    stack.assertExitedOk(await stack.granule(['node', 'add', 'n8', '--hostname', 'h8']), 'node add n8');
    const typo = await stack.granule(['node', 'assign', 'n8', '--env', 'roles', '--roles', 'controler']);
    expect([typo.code, typo.stdout, typo.stderr]).toEqual([
      1,
      '',
      "error: roles: role 'controler' is not defined by the release or the plugins of environment 'roles'; it defines compute, controller, storage\n",
    ]);
    const json = await stack.granule(['node', 'assign', 'n8', '--env', 'roles', '--roles', 'web', '-o', 'json']);
    const error = (JSON.parse(json.stderr) as { error: { diagnostics: { code: string }[] } }).error;
    expect([json.code, error.diagnostics.map((d) => d.code)]).toEqual([1, ['CONFIG_UNKNOWN_ROLE']]);
    const assigned = await stack.granule([
      'node',
      'assign',
      'n8',
      '--env',
      'roles',
      '--roles',
      'controller',
      '-o',
      'json',
    ]);
    stack.assertExitedOk(assigned, 'node assign n8 controller');
    expect((JSON.parse(assigned.stdout) as { pending_roles: string[] }).pending_roles).toEqual(['controller']);
  }, 60_000);
});
