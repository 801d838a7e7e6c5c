import fc from 'fast-check';
import { GranuleError } from '@granule/core';
import { PlanCycleError, buildPlan, planInstances } from '@granule/planner';
import { assertNoErrors, parseTaskData, parseTaskFile } from '@granule/task-model';
import type { NodeSpec } from '@granule/task-model';

// Property-based tests (issue 22): fast-check prints the seed and the shrunk counterexample on
// failure; rerun one with fc.assert(..., { seed, path }). numRuns keeps each file to seconds.
const RUNS = { numRuns: 60 };

const ROLES = ['a', 'b', 'c'];
const nodesArb: fc.Arbitrary<NodeSpec[]> = fc
  .array(fc.subarray(ROLES, { minLength: 1 }), { minLength: 1, maxLength: 5 })
  .map((roles) => roles.map((r, i) => ({ uid: `n${i}`, roles: r })));

/** A DAG of shell tasks: task i may require any task before it; each runs on some roles. */
const dagArb = fc.integer({ min: 1, max: 20 }).chain((n) =>
  fc.tuple(
    ...Array.from({ length: n }, (_, i) =>
      fc.record({
        requires: fc.subarray(Array.from({ length: i }, (_, j) => `t${j}`)),
        roles: fc.subarray(ROLES, { minLength: 1 }),
      }),
    ),
  ),
);

const record = (id: string, roles: string[], requires: string[]) => ({
  id,
  type: 'shell',
  version: '2.0.0',
  roles,
  requires,
  parameters: { cmd: 'true' },
});

function reachable(requires: Map<string, string[]>, from: string, to: string): boolean {
  const seen = new Set<string>();
  const stack = [to];
  while (stack.length > 0) {
    const at = stack.pop() as string;
    if (at === from) return true;
    if (seen.has(at)) continue;
    seen.add(at);
    stack.push(...(requires.get(at) ?? []));
  }
  return false;
}

describe('task files and planning - properties', () => {
  it('a plan respects every edge: each predecessor has a lower priority, each requires is a path', () => {
    fc.assert(
      fc.property(dagArb, nodesArb, (dag, nodes) => {
        const records = dag.map((t, i) => record(`t${i}`, t.roles, t.requires));
        const tasks = assertNoErrors(parseTaskFile(JSON.stringify(records), 'g/deployment_tasks.yaml'));
        const instances = planInstances(buildPlan({ tasks, nodes }));
        const byName = new Map(instances.map((i) => [`${i.task}@${i.node}`, i]));
        const requires = new Map(instances.map((i) => [`${i.task}@${i.node}`, i.requires]));
        for (const inst of instances)
          for (const pred of inst.requires) expect(byName.get(pred)?.priority ?? Infinity).toBeLessThan(inst.priority);
        for (const [i, t] of dag.entries())
          for (const dep of t.requires)
            for (const node of nodes) {
              const after = `t${i}@${node.uid}`;
              const before = `${dep}@${node.uid}`;
              if (byName.has(after) && byName.has(before)) expect(reachable(requires, before, after)).toBe(true);
            }
      }),
      RUNS,
    );
  });

  it('a cycle is always named: every task on it appears in the error', () => {
    fc.assert(
      fc.property(dagArb, fc.integer({ min: 2, max: 6 }), (dag, length) => {
        const records = dag.map((t, i) => record(`t${i}`, ['a'], t.requires));
        const cycle = Array.from({ length }, (_, i) => `c${i}`);
        cycle.forEach((id, i) => records.push(record(id, ['a'], [cycle[(i + length - 1) % length], 't0'])));
        const tasks = assertNoErrors(parseTaskFile(JSON.stringify(records), 'g/deployment_tasks.yaml'));
        let error: unknown;
        try {
          buildPlan({ tasks, nodes: [{ uid: 'n0', roles: ['a'] }] });
        } catch (err) {
          error = err;
        }
        expect(error).toBeInstanceOf(PlanCycleError);
        for (const id of cycle) expect((error as Error).message).toContain(`${id}@n0`);
      }),
      RUNS,
    );
  });

  it('no input throws anything but a typed user error: arbitrary data, arbitrary YAML-ish text', () => {
    const token = fc.constantFrom(
      '- ',
      'id: ',
      'type: ',
      'shell',
      'requires: ',
      'roles: ',
      '&a ',
      '*a ',
      '<<: ',
      '[',
      ']',
      '{',
      '}',
      ': ',
      '\n',
      '  ',
      'x',
      '"',
      "'",
      '!!str ',
      '---\n',
      '%YAML 1.2\n',
      '#',
      '?',
      '|',
      '>',
      '\u0000',
      '\t',
      'é',
      '__proto__',
    );
    const text = fc.array(token, { maxLength: 40 }).map((t) => t.join(''));
    const typedOrNothing = (fn: () => unknown): void => {
      try {
        fn();
      } catch (err) {
        expect(err).toBeInstanceOf(GranuleError);
      }
    };
    fc.assert(
      fc.property(fc.oneof(text, fc.string()), fc.jsonValue(), (yaml, data) => {
        const fromText = parseTaskFile(yaml, 'x/tasks.yaml');
        const fromData = parseTaskData(data, 'x/deployment_tasks.yaml');
        for (const r of [fromText, fromData]) {
          expect(Array.isArray(r.diagnostics)).toBe(true);
          if (!r.diagnostics.some((d) => d.severity === 'error'))
            typedOrNothing(() => buildPlan({ tasks: r.tasks, nodes: [{ uid: 'n0', roles: ['a', 'x'] }] }));
        }
      }),
      { numRuns: 300 },
    );
  });
});
