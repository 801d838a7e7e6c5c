import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

// Runs the built CLI (./granule builds dist/ when sources changed).
const root = join(__dirname, '..', '..', '..', '..');
const granule = (...args: string[]) =>
  spawnSync(join(root, 'granule'), args, { cwd: root, encoding: 'utf8', timeout: 120_000 });
const STRATEGY = 'examples/strategies/deployment-strategy.yaml';
const NODES = 'examples/strategies/nodes.yaml';

describe('granule strategy (built CLI)', () => {
  it('simulate -o json prints the outcome and exits 0; an unknown uid exits 2', () => {
    const ok = granule(
      'strategy',
      'simulate',
      STRATEGY,
      '--nodes',
      NODES,
      '--fail-deploy',
      'cmp201,cmp202',
      '-o',
      'json',
    );
    expect(ok.status).toBe(0);
    const out = JSON.parse(ok.stdout) as { outcome: string; nodes: Record<string, string> };
    expect(out.outcome).toBe('partial');
    expect(out.nodes.cmp201).toBe('failed');

    const bad = granule('strategy', 'simulate', STRATEGY, '--nodes', NODES, '--fail-prepare', 'ghost');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('error: --fail-prepare: unknown node uid(s): ghost\n');
  });

  it('validate exits 1 with json on stdout for an invalid file and 1 for a missing one', () => {
    const invalid = granule('strategy', 'validate', 'examples/strategies/nodes.yaml', '-o', 'json');
    expect(invalid.status).toBe(1);
    expect(JSON.parse(invalid.stdout)).toEqual({
      valid: false,
      errors: [
        'examples/strategies/nodes.yaml:3: expected a DeploymentStrategy document (schema: shipyard/DeploymentStrategy/v1 with data.groups) or a mapping with groups, got a mapping without groups (keys: nodes)',
      ],
      warnings: [],
    });
    const missing = granule('strategy', 'validate', 'no-such.yaml');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toBe('error: no-such.yaml: no such file or directory\n');
  });
});
