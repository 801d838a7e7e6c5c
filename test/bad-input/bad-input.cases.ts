// The bad-input table: hostile or broken inputs and what Granule answers. The tests run every
// case (bad-input-files.spec.ts: packages, install.sh; bad-input.e2e.spec.ts: the built CLI,
// agent and config-store over NATS and HTTP) and
// docs/bad-input.md is written from the same table (`npm run docs:bad-input`; a unit test
// fails when the document is stale), so the document says what the tests check.

/** A billion-laughs YAML document: each line's anchor repeats the previous one 9 times. */
export function aliasBomb(): string {
  const lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]'];
  for (let i = 1; i < 7; i++)
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(',')}]`,
    );
  return `${lines.join('\n')}\n`;
}

const NODES = 'nodes:\n  - {uid: n1, roles: [controller]}\n';
const TASKS = '- id: t1\n  type: shell\n  version: 2.0.0\n  roles: [controller]\n  parameters: {cmd: "true"}\n';
const UID_RULE = "1 to 63 letters, digits, '_' or '-', starting with a letter or digit";
const BOMB_ANSWER = 'aliases here expand the document to 6,053,451 nodes; the bound is 1,000,000 (an alias bomb?)';

/** A file the CLI case writes before it runs: text, or raw bytes. */
export interface CaseFile {
  name: string;
  text?: string;
  bytes?: number[];
}

/** `granule ARGS` in a folder holding `files`; the answer is the exit code and stderr. */
export interface CliCase {
  kind: 'cli';
  args: string[];
  files: CaseFile[];
  exit: number;
  /** Every stderr line, exactly. */
  stderr: string[];
}

/** A request to `<prefix>.config.<op>`; the answer is the error envelope. */
export interface NatsCase {
  kind: 'nats';
  op: string;
  payload: () => unknown;
  code: string;
  message: string;
}

/** An HTTP request to the config-store; the answer is the status and `error.message`. */
export interface HttpCase {
  kind: 'http';
  method: string;
  path: string;
  body: () => string;
  status: number;
  message: string;
}

/** A `.tar.gz` plugin package given to `extractPluginPackage` (and `granule plugin validate`). */
export interface PackageCase {
  kind: 'package';
  entries: Array<{
    path: string;
    type?: 'File' | 'Directory' | 'SymbolicLink' | 'Link';
    linkpath?: string;
    body?: string;
  }>;
  /** The error message after `<file>: `. */
  message: string;
}

/** The node agent started with GRANULE_NODE_UID=uid; the answer is its exit code and stderr. */
export interface AgentCase {
  kind: 'agent';
  uid: string;
  stderr: string;
}

/** deploy/node-agent/install.sh arguments. */
export interface InstallCase {
  kind: 'install';
  args: string[];
  exit: number;
  stderr: string;
}

export interface BadInputCase {
  /** What the operator gives, in words. */
  input: string;
  /** Where it is given. */
  where: string;
  run: CliCase | NatsCase | HttpCase | PackageCase | AgentCase | InstallCase;
}

export const BAD_INPUT_CASES: BadInputCase[] = [
  {
    input: 'YAML alias bomb in a tasks file',
    where: 'granule plan --tasks',
    run: {
      kind: 'cli',
      args: ['plan', '--tasks', 'bomb.yaml', '--nodes', 'nodes.yaml'],
      files: [
        { name: 'bomb.yaml', text: aliasBomb() },
        { name: 'nodes.yaml', text: NODES },
      ],
      exit: 1,
      stderr: [`error: bomb.yaml:7: ${BOMB_ANSWER}`],
    },
  },
  {
    input: 'YAML alias bomb in a nodes file',
    where: 'granule plan --nodes',
    run: {
      kind: 'cli',
      args: ['plan', '--tasks', 'tasks.yaml', '--nodes', 'bomb.yaml'],
      files: [
        { name: 'tasks.yaml', text: TASKS },
        { name: 'bomb.yaml', text: aliasBomb() },
      ],
      exit: 1,
      stderr: [`error: bomb.yaml:7: ${BOMB_ANSWER}`],
    },
  },
  {
    input: 'YAML alias bomb in a cluster file',
    where: 'granule plan --cluster',
    run: {
      kind: 'cli',
      args: ['plan', '--tasks', 'tasks.yaml', '--nodes', 'nodes.yaml', '--cluster', 'bomb.yaml'],
      files: [
        { name: 'tasks.yaml', text: TASKS },
        { name: 'nodes.yaml', text: NODES },
        { name: 'bomb.yaml', text: aliasBomb() },
      ],
      exit: 1,
      stderr: [`error: bomb.yaml:7: ${BOMB_ANSWER}`],
    },
  },
  {
    input: 'YAML alias bomb in a strategy file',
    where: 'granule strategy plan',
    run: {
      kind: 'cli',
      args: ['strategy', 'plan', 'bomb.yaml', '--nodes', 'nodes.yaml'],
      files: [
        { name: 'bomb.yaml', text: aliasBomb() },
        { name: 'nodes.yaml', text: NODES },
      ],
      exit: 1,
      stderr: [`error: bomb.yaml:7: ${BOMB_ANSWER}`],
    },
  },
  {
    input: 'lists nested 50,000 deep in a tasks file',
    where: 'granule plan --tasks',
    run: {
      kind: 'cli',
      args: ['plan', '--tasks', 'deep.yaml', '--nodes', 'nodes.yaml'],
      files: [
        { name: 'deep.yaml', text: `- ${'['.repeat(50_000)}${']'.repeat(50_000)}\n` },
        { name: 'nodes.yaml', text: NODES },
      ],
      exit: 1,
      stderr: ['error: deep.yaml:1: nested deeper than 64 levels (mappings and lists inside each other), the bound'],
    },
  },
  {
    input: 'a binary file (an ELF executable) as a tasks file',
    where: 'granule plan --tasks',
    run: {
      kind: 'cli',
      args: ['plan', '--tasks', 'tool.yaml', '--nodes', 'nodes.yaml'],
      files: [
        { name: 'tool.yaml', bytes: [0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, 0, 0, 0x1b, 0x5b, 0x32, 0x4a] },
        { name: 'nodes.yaml', text: NODES },
      ],
      exit: 1,
      stderr: ['error: tool.yaml:1: not a text file: it has a NUL byte (a binary file?); expected UTF-8 YAML or JSON'],
    },
  },
  {
    input: 'a UTF-16 nodes file',
    where: 'granule plan --nodes',
    run: {
      kind: 'cli',
      args: ['plan', '--tasks', 'tasks.yaml', '--nodes', 'nodes.yaml'],
      files: [
        { name: 'tasks.yaml', text: TASKS },
        { name: 'nodes.yaml', bytes: [0xff, 0xfe, ...[...'nodes: []\n'].flatMap((c) => [c.charCodeAt(0), 0])] },
      ],
      exit: 1,
      stderr: ['error: nodes.yaml:1: is UTF-16 text (it starts with a UTF-16 byte order mark); save it as UTF-8'],
    },
  },
  {
    input: "node uids '>' and '*' (NATS wildcards)",
    where: 'granule plan --nodes',
    run: {
      kind: 'cli',
      args: ['plan', '--tasks', 'tasks.yaml', '--nodes', 'nodes.yaml'],
      files: [
        { name: 'tasks.yaml', text: TASKS },
        {
          name: 'nodes.yaml',
          text: "nodes:\n  - {uid: '>', roles: [controller]}\n  - {uid: '*', roles: [controller]}\n",
        },
      ],
      exit: 1,
      stderr: [
        `error: nodes.yaml:2: nodes[0].uid: expected a node uid of ${UID_RULE}, got ">"`,
        `error: nodes.yaml:3: nodes[1].uid: expected a node uid of ${UID_RULE}, got "*"`,
      ],
    },
  },
  {
    input: 'a tasks.yaml record without an id',
    where: 'granule plan --tasks',
    run: {
      kind: 'cli',
      args: ['plan', '--tasks', 'tasks.yaml', '--nodes', 'nodes.yaml'],
      files: [
        { name: 'tasks.yaml', text: '- type: shell\n  roles: [controller]\n  parameters: {cmd: "true"}\n' },
        { name: 'nodes.yaml', text: NODES },
      ],
      exit: 1,
      stderr: [
        "error: tasks.yaml:1: [0]: task has no 'id' and no 'stage': give it an id (a granular task), or a stage such as 'post_deployment/100' (a legacy tasks.yaml task)",
      ],
    },
  },
  {
    input: "a task id with '@'",
    where: 'granule plan --tasks',
    run: {
      kind: 'cli',
      args: ['plan', '--tasks', 'deployment_tasks.yaml', '--nodes', 'nodes.yaml'],
      files: [
        { name: 'deployment_tasks.yaml', text: "- id: 'a@b'\n  type: skipped\n" },
        { name: 'nodes.yaml', text: NODES },
      ],
      exit: 1,
      stderr: [
        `error: deployment_tasks.yaml:1: [0].id: expected a task id of 1 to 128 letters, digits, '_', '.', ':' or '-', starting with a letter, digit or '_', got "a@b"`,
      ],
    },
  },
  {
    input: '`--setting __proto__.polluted=yes`',
    where: 'granule env set',
    run: {
      kind: 'cli',
      args: ['env', 'set', 'demo', '--setting', '__proto__.polluted=yes'],
      files: [],
      exit: 1,
      stderr: [
        "error: --setting __proto__.polluted: the keys '__proto__', 'constructor' and 'prototype' are not allowed",
      ],
    },
  },
  {
    input: 'settings_patch `{"__proto__.polluted": "yes"}`',
    where: 'NATS config.env.update',
    run: {
      kind: 'nats',
      op: 'env.update',
      payload: () => ({ id: 'demo', settings_patch: { '__proto__.polluted': 'yes' } }),
      code: 'INVALID_INPUT',
      message: "settings_patch.__proto__.polluted: the keys '__proto__', 'constructor' and 'prototype' are not allowed",
    },
  },
  {
    input: "node uid '>'",
    where: 'NATS config.node.add',
    run: {
      kind: 'nats',
      op: 'node.add',
      payload: () => ({ uid: '>', hostname: 'h' }),
      code: 'INVALID_INPUT',
      message: `uid: expected a node uid of ${UID_RULE}, got ">"`,
    },
  },
  {
    input: 'a 600 KB label',
    where: 'NATS config.node.add',
    run: {
      kind: 'nats',
      op: 'node.add',
      payload: () => ({ uid: 'n600', hostname: 'h', labels: { big: 'x'.repeat(600 * 1024) } }),
      code: 'INVALID_INPUT',
      message: 'labels: expected at most 16 KiB as JSON, got 600 KiB',
    },
  },
  {
    input: 'a YAML alias bomb as a strategy document',
    where: 'NATS config.strategy.upload',
    run: {
      kind: 'nats',
      op: 'strategy.upload',
      payload: () => ({ name: 'bomb', document: aliasBomb(), file: 'bomb.yaml' }),
      code: 'INVALID_INPUT',
      message: `bomb.yaml:7: ${BOMB_ANSWER}`,
    },
  },
  {
    input: 'settings nested 2,000 deep',
    where: 'NATS config.env.update',
    run: {
      kind: 'nats',
      op: 'env.update',
      payload: () => {
        let v: unknown = 1;
        for (let i = 0; i < 2_000; i++) v = { a: v };
        return { id: 'demo', settings: v };
      },
      code: 'INVALID_INPUT',
      message:
        'the config.env.update request: nested deeper than 64 levels (mappings and lists inside each other), the bound',
    },
  },
  {
    input: '5,001 tasks in one graph',
    where: 'NATS config.tasks.put',
    run: {
      kind: 'nats',
      op: 'tasks.put',
      payload: () => ({
        scope: 'release',
        id: '1',
        graph: 'big',
        tasks: Array.from({ length: 5_001 }, (_, i) => ({ id: `t${i}`, type: 'skipped' })),
      }),
      code: 'INVALID_INPUT',
      message: 'tasks: expected at most 5000 tasks, got 5001 tasks',
    },
  },
  {
    input: 'a 15 MB label',
    where: 'HTTP POST /nodes',
    run: {
      kind: 'http',
      method: 'POST',
      path: '/nodes',
      body: () => JSON.stringify({ uid: 'big', hostname: 'h', labels: { huge: 'x'.repeat(15_000_000) } }),
      status: 400,
      message: 'labels: expected at most 16 KiB as JSON, got 14.3 MiB',
    },
  },
  {
    input: 'a JSON body nested 50,000 deep',
    where: 'HTTP PATCH /clusters/:id',
    run: {
      kind: 'http',
      method: 'PATCH',
      path: '/clusters/demo',
      body: () => `{"settings": ${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}`,
      status: 400,
      message: 'line 1: body: nested deeper than 64 levels (mappings and lists inside each other), the bound',
    },
  },
  {
    input: 'a 17 MiB request body',
    where: 'HTTP POST /nodes',
    run: {
      kind: 'http',
      method: 'POST',
      path: '/nodes',
      body: () => JSON.stringify({ uid: 'x', hostname: 'y'.repeat(17 * 1024 * 1024) }),
      status: 413,
      message: 'body: the request body is too large: expected at most 16 MiB, got 17 MiB',
    },
  },
  {
    input: '`?graph=probe` on a task upload with a typo (`?grpah=probe`)',
    where: 'HTTP PUT /releases/:id/deployment_tasks',
    run: {
      kind: 'http',
      method: 'PUT',
      path: '/releases/1/deployment_tasks?grpah=probe',
      body: () => JSON.stringify([{ id: 'p', type: 'skipped' }]),
      status: 400,
      message: "grpah: unknown query parameter 'grpah' (expected graph)",
    },
  },
  {
    input: 'a symlink chain leaving the package (`d/a -> ..`, then `d/a/b -> ../x`)',
    where: 'extractPluginPackage, granule plugin validate|install FILE.tar.gz',
    run: {
      kind: 'package',
      entries: [
        { path: 'd/', type: 'Directory' },
        { path: 'd/a', type: 'SymbolicLink', linkpath: '..' },
        { path: 'd/a/b', type: 'SymbolicLink', linkpath: '../x' },
      ],
      message:
        "entry 'd/a/b' lies beneath the symlink 'd/a'; an entry may not be written through a link; the package was not extracted",
    },
  },
  {
    input: 'links that resolve outside only through each other',
    where: 'extractPluginPackage',
    run: {
      kind: 'package',
      entries: [
        { path: 'sub/', type: 'Directory' },
        { path: 'sub/up', type: 'SymbolicLink', linkpath: '..' },
        { path: 'out', type: 'SymbolicLink', linkpath: 'sub/up/..' },
      ],
      message:
        "symlink 'out' resolves outside the package through other links ('sub/up/..'); the package was not extracted",
    },
  },
  {
    input: 'GRANULE_NODE_UID=web.1',
    where: 'node agent start-up',
    run: {
      kind: 'agent',
      uid: 'web.1',
      stderr: `node-agent: invalid configuration: GRANULE_NODE_UID: must be a node uid of ${UID_RULE} (got "web.1")`,
    },
  },
  {
    input: '`--node-uid web.1`',
    where: 'deploy/node-agent/install.sh',
    run: {
      kind: 'install',
      args: ['--dry-run', '--node-uid', 'web.1'],
      exit: 2,
      stderr: `install.sh: --node-uid: expected a node uid of ${UID_RULE}, got 'web.1'`,
    },
  },
  {
    input: '`--protect-home maybe`',
    where: 'deploy/node-agent/install.sh',
    run: {
      kind: 'install',
      args: ['--dry-run', '--node-uid', 'web-1', '--protect-home', 'maybe'],
      exit: 2,
      stderr: "install.sh: --protect-home: expected no, read-only, tmpfs or yes, got 'maybe'",
    },
  },
  {
    input: '`--creds` naming a file that is not a NATS credential',
    where: 'deploy/node-agent/install.sh',
    run: {
      kind: 'install',
      args: ['--dry-run', '--node-uid', 'web-1', '--creds', 'package.json'],
      exit: 2,
      stderr:
        "install.sh: --creds: 'package.json' is not a NATS credential (no 'BEGIN NATS USER JWT' line); make one with: granule agent enroll web-1 --out FILE",
    },
  },
];

/** What Granule answers to a case, as the document shows it. */
export function answerOf(c: BadInputCase): string {
  const r = c.run;
  switch (r.kind) {
    case 'cli':
      return `exit ${r.exit}: ${r.stderr.join(' / ')}`;
    case 'nats':
      return `error envelope ${r.code}: ${r.message}`;
    case 'http':
      return `${r.status}: ${r.message}`;
    case 'package':
      return `PLUGIN_PACKAGE_UNSAFE: ${r.message}; nothing written`;
    case 'agent':
      return `exit 1: ${r.stderr}`;
    case 'install':
      return `exit ${r.exit}: ${r.stderr}`;
  }
}
