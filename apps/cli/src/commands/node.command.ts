import type { Command } from 'commander';
import { UsageError } from '@granule/core';
import type { AddNodeRequest, NodeCredentialView, NodeView, UpdateNodeRequest } from '@granule/contracts';
import type { ConfigStoreClient } from '@granule/config-store-client';
import { addConnectionOptions, printResult, withConfigStore } from '../connection';
import { helpExamples } from '../messages';

interface NodeOptions {
  natsUrl?: string;
  subjectPrefix?: string;
  output: string;
  hostname?: string;
  address?: string;
  roles?: string;
  tags?: string;
  label?: string[];
  rack?: string;
  env?: string;
  remove?: boolean;
}

const COLUMNS = [
  'uid',
  'hostname',
  'address',
  'environment',
  'roles',
  'pending_roles',
  'tags',
  'labels',
  'rack',
  'status',
  'credential',
];
const list = (value: string): string[] =>
  value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * The `credential` cell of a node: `active (expires 2027-11-25)`, `active` (no expiry),
 * `revoked 2026-11-25`, `expired 2026-11-20` (UTC dates), `-` when none is recorded.
 */
export function credentialCell(credential: NodeCredentialView | null | undefined): string {
  if (!credential) return '-';
  const day = (iso: string | null): string => (iso ? iso.slice(0, 10) : '');
  switch (credential.state) {
    case 'active':
      return credential.expires_at ? `active (expires ${day(credential.expires_at)})` : 'active';
    case 'revoked':
      return `revoked ${day(credential.revoked_at)}`.trimEnd();
    case 'expired':
      return `expired ${day(credential.expires_at)}`.trimEnd();
  }
}

/** `KEY=VALUE` sets a label, `KEY-` removes it (kubectl's convention). */
export function parseLabels(items: readonly string[], allowRemove: boolean): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq > 0) out[item.slice(0, eq)] = item.slice(eq + 1);
    else if (allowRemove && item.endsWith('-') && item.length > 1) out[item.slice(0, -1)] = null;
    else throw new UsageError(`label ${item}: expected KEY=VALUE${allowRemove ? ' or KEY- (to remove it)' : ''}`);
  }
  return out;
}

/** `granule node add|list|show|assign|tag|label|rack|remove` — nodes in the config-store. */
export function registerNodeCommand(program: Command): void {
  const node = program.command('node').description('nodes: hosts with roles, tags, labels and a rack');
  const leaf = (name: string, description: string): Command =>
    addConnectionOptions(node.command(name).description(description)).option(
      '-o, --output <format>',
      'json | yaml | table',
      'table',
    );
  // A table names each node's environment (the view carries its id) and sums up its agent
  // credential; json and yaml keep the view as it is.
  const show = async (
    opts: NodeOptions,
    ask: (c: ConfigStoreClient) => Promise<NodeView | NodeView[]>,
  ): Promise<void> => {
    const [result, envs] = await withConfigStore(opts, async (c) => {
      const nodes = await ask(c);
      return [nodes, opts.output === 'table' ? await c.request('env.list', {}) : []] as const;
    });
    const names = new Map(envs.map((e) => [e.id, e.name]));
    const rows = (Array.isArray(result) ? result : [result]).map((n) => ({
      ...n,
      environment: n.environment === null ? '' : (names.get(n.environment) ?? n.environment),
      credential: credentialCell(n.credential),
    }));
    await printResult(result, opts.output, { rows, columns: COLUMNS });
  };
  const update = async (opts: NodeOptions, req: UpdateNodeRequest): Promise<void> =>
    show(opts, (c) => c.request('node.update', req));

  leaf('add', 'register a node')
    .argument('<uid>', 'node uid')
    .requiredOption('--hostname <name>', 'host name')
    .option('--address <ip>', 'address the node agent is reached at')
    .option('--roles <a,b>', 'deployed roles')
    .option('--tags <a,b>', 'tags')
    .option('--label <key=value>', 'label (repeatable)', collect)
    .option('--rack <name>', 'rack')
    .option('--env <id>', 'environment id or name')
    .addHelpText(
      'after',
      '\nExample:\n  granule node add node-1 --hostname ctl01 --address 10.0.0.11 --rack r1 --label zone=a',
    )
    .action(async (uid: string, opts: NodeOptions) => {
      const req: AddNodeRequest = { uid, hostname: opts.hostname as string };
      if (opts.address) req.address = opts.address;
      if (opts.roles) req.roles = list(opts.roles);
      if (opts.tags) req.tags = list(opts.tags);
      if (opts.label) req.labels = parseLabels(opts.label, false) as Record<string, string>;
      if (opts.rack) req.rack = opts.rack;
      if (opts.env) req.environment = opts.env;
      await show(opts, (c) => c.request('node.add', req));
    });

  leaf('list', 'list nodes')
    .addHelpText('after', helpExamples('granule node list --env prod', 'granule node list -o json'))
    .option('--env <id>', 'only the nodes of this environment')
    .action(async (opts: NodeOptions) =>
      show(opts, (c) => c.request('node.list', opts.env ? { environment: opts.env } : {})),
    );

  leaf('show', 'show one node')
    .addHelpText('after', helpExamples('granule node show node-1 -o yaml'))
    .argument('<uid>', 'node uid')
    .action(async (uid: string, opts: NodeOptions) => show(opts, (c) => c.request('node.get', { uid })));

  leaf('assign', 'put a node in an environment with pending roles')
    .argument('<uid>', 'node uid')
    .requiredOption('--env <id>', 'environment id or name')
    .requiredOption('--roles <a,b>', 'roles to deploy on it')
    .addHelpText('after', '\nExample:\n  granule node assign node-1 --env prod --roles controller')
    .action(async (uid: string, opts: NodeOptions) =>
      show(opts, (c) =>
        c.request('node.assign', { uid, environment: opts.env as string, roles: list(opts.roles as string) }),
      ),
    );

  leaf('tag', 'add tags to a node (or remove them with --remove)')
    .addHelpText('after', helpExamples('granule node tag node-1 gpu ssd', 'granule node tag node-1 ssd --remove'))
    .argument('<uid>', 'node uid')
    .argument('<tags...>', 'tags')
    .option('--remove', 'remove the tags instead')
    .action(async (uid: string, tags: string[], opts: NodeOptions) =>
      update(opts, opts.remove ? { uid, remove_tags: tags } : { uid, add_tags: tags }),
    );

  leaf('label', 'set labels (KEY=VALUE) or remove them (KEY-)')
    .addHelpText('after', helpExamples('granule node label node-1 zone=a tier=web', 'granule node label node-1 tier-'))
    .argument('<uid>', 'node uid')
    .argument('<labels...>', 'KEY=VALUE or KEY-')
    .action(async (uid: string, labels: string[], opts: NodeOptions) =>
      update(opts, { uid, labels: parseLabels(labels, true) }),
    );

  leaf('rack', 'set the rack of a node (no RACK: clear it)')
    .addHelpText('after', helpExamples('granule node rack node-1 r7', 'granule node rack node-1'))
    .argument('<uid>', 'node uid')
    .argument('[rack]', 'rack name')
    .action(async (uid: string, rack: string | undefined, opts: NodeOptions) =>
      update(opts, { uid, rack: rack ?? null }),
    );

  leaf('remove', 'remove a node')
    .addHelpText('after', helpExamples('granule node remove node-1'))
    .argument('<uid>', 'node uid')
    .action(async (uid: string, opts: NodeOptions) => show(opts, (c) => c.request('node.remove', { uid })));
}
