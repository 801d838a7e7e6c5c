import fc from 'fast-check';
import { GranuleError } from '@granule/core';
import {
  ConditionEvaluationError,
  ConditionSyntaxError,
  compileCondition,
  evaluateCondition,
} from '@granule/conditions';
import { evaluateCriteria, parseStrategyDocument, simulateStrategy } from '@granule/deployment-strategy';
import type { NodeSpec } from '@granule/task-model';

// Property-based tests (issue 22); fast-check prints the seed and the counterexample on failure.
const RUNS = { numRuns: 100 };

describe('conditions - properties', () => {
  const ref = fc.constantFrom('settings:a.b', 'settings:list', 'cluster:status', 'node:roles', 'settings:__proto__.x');
  const literal = fc.oneof(
    fc.integer({ min: 0, max: 100 }).map(String),
    fc.constantFrom("'new'", '"x"', 'true', 'false', 'null', '[1, 2]', 'api.cluster_status', 'api.nodes_count()'),
  );
  const { expr } = fc.letrec<{ expr: string }>((tie) => ({
    expr: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      literal,
      ref,
      fc
        .tuple(tie('expr'), fc.constantFrom('==', '!=', '<', '>=', 'in', 'not in'), tie('expr'))
        .map((p) => p.join(' ')),
      fc
        .tuple(fc.constantFrom('and', 'or', '&&', '||'), tie('expr'), tie('expr'))
        .map(([op, a, b]) => `(${a}) ${op} (${b})`),
      tie('expr').map((e) => `not (${e})`),
      tie('expr').map((e) => `api.role_in_deployment(${e})`),
    ),
  }));
  const context = fc.record({
    status: fc.constantFrom('new', 'operational'),
    settings: fc.jsonValue().map((v) => ({ a: { b: v }, list: [1, 'x'] })),
  });

  it('generated expressions compile or fail with CONDITION_SYNTAX; evaluation is a boolean or CONDITION_EVALUATION', () => {
    fc.assert(
      fc.property(fc.oneof(expr, fc.string()), context, (source, ctx) => {
        let compiled;
        try {
          compiled = compileCondition(source);
        } catch (err) {
          expect(err).toBeInstanceOf(ConditionSyntaxError);
          return;
        }
        const nodes: NodeSpec[] = [{ uid: 'n1', roles: ['a'] }];
        try {
          expect(typeof evaluateCondition(compiled, { cluster: ctx, nodes, node: nodes[0] })).toBe('boolean');
        } catch (err) {
          expect(err).toBeInstanceOf(ConditionEvaluationError);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('number comparisons mean what they mean in arithmetic', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 1000 }), (a, b) => {
        const ctx = { cluster: { status: 'new', settings: {} }, nodes: [] };
        expect(evaluateCondition(compileCondition(`${a} < ${b}`), ctx)).toBe(a < b);
        expect(evaluateCondition(compileCondition(`${a} == ${b} or ${a} > ${b}`), ctx)).toBe(a >= b);
      }),
      RUNS,
    );
  });
});

describe('strategy documents and success criteria - properties', () => {
  const criteriaArb = fc.record(
    {
      percent_successful_nodes: fc.integer({ min: 0, max: 100 }),
      minimum_successful_nodes: fc.integer({ min: 0, max: 6 }),
      maximum_failed_nodes: fc.integer({ min: 0, max: 6 }),
    },
    { requiredKeys: [] },
  );
  /** Nodes split among groups (each node in exactly one group); dependencies on earlier groups only. */
  const scenario = fc
    .record({
      groups: fc.integer({ min: 1, max: 5 }),
      nodes: fc.integer({ min: 0, max: 12 }),
    })
    .chain(({ groups, nodes }) =>
      fc.record({
        owner: fc.array(fc.integer({ min: 0, max: groups - 1 }), { minLength: nodes, maxLength: nodes }),
        criteria: fc.array(criteriaArb, { minLength: groups, maxLength: groups }),
        deps: fc.tuple(
          ...Array.from({ length: groups }, (_, g) =>
            fc.subarray(
              Array.from({ length: g }, (_, j) => `g${j}`),
              { maxLength: Math.min(2, g) },
            ),
          ),
        ),
        failing: fc.subarray(Array.from({ length: nodes }, (_, i) => `n${i}`)),
      }),
    );

  it('the simulator deploys a group exactly when its criteria hold and its dependencies deployed', () => {
    fc.assert(
      fc.property(scenario, ({ owner, criteria, deps, failing }) => {
        const nodes: NodeSpec[] = owner.map((_, i) => ({ uid: `n${i}`, roles: ['x'] }));
        const members = criteria.map((_, g) => owner.flatMap((o, i) => (o === g ? [`n${i}`] : [])));
        const doc = {
          schema: 'shipyard/DeploymentStrategy/v1',
          metadata: { name: 's' },
          data: {
            groups: criteria.map((c, g) => ({
              name: `g${g}`,
              critical: false,
              depends_on: deps[g],
              // An empty selector selects every node; a group without members names a node there is not.
              selectors: [
                {
                  node_names: members[g].length > 0 ? members[g] : ['absent'],
                  node_labels: [],
                  node_tags: [],
                  rack_names: [],
                },
              ],
              ...(Object.keys(c).length > 0 ? { success_criteria: c } : {}),
            })),
          },
        };
        const parsed = parseStrategyDocument(doc, 's.yaml', nodes);
        expect(parsed.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
        if (!parsed.strategy) throw new Error('expected a valid strategy');
        const state = simulateStrategy(parsed.strategy, nodes, { failDeploy: failing });
        const deployed = new Map<string, boolean>();
        criteria.forEach((c, g) => {
          const total = members[g].length;
          const failed = members[g].filter((uid) => failing.includes(uid)).length;
          const crit = {
            percentSuccessfulNodes: c.percent_successful_nodes,
            minimumSuccessfulNodes: c.minimum_successful_nodes,
            maximumFailedNodes: c.maximum_failed_nodes,
          };
          const ok =
            deps[g].every((d) => deployed.get(d)) &&
            evaluateCriteria(crit, { total, succeeded: total, failed: 0 }).length === 0 &&
            evaluateCriteria(crit, { total, succeeded: total - failed, failed }).length === 0;
          deployed.set(`g${g}`, ok);
          expect([`g${g}`, state.groups.find((x) => x.name === `g${g}`)?.status]).toEqual([
            `g${g}`,
            ok ? 'DEPLOYED' : 'FAILED',
          ]);
        });
      }),
      RUNS,
    );
  });

  it('arbitrary documents never throw: every problem is a diagnostic', () => {
    const yamlish = fc
      .array(
        fc.constantFrom(
          'groups:',
          '\n',
          '  - ',
          'name: ',
          'g',
          'depends_on: [',
          ']',
          '&a ',
          '*a ',
          '{',
          '}',
          'critical: ',
          'yes',
          '\u0000',
        ),
        {
          maxLength: 30,
        },
      )
      .map((t) => t.join(''));
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), yamlish, fc.string()), (input) => {
        try {
          const r = parseStrategyDocument(input, 's.yaml');
          expect(r.strategy !== undefined || r.diagnostics.some((d) => d.severity === 'error')).toBe(true);
        } catch (err) {
          expect(err).toBeInstanceOf(GranuleError);
          throw err;
        }
      }),
      { numRuns: 300 },
    );
  });
});
