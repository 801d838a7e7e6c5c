import { readFaultTolerance, resolveFaultTolerance } from './fault-tolerance';

describe('readFaultTolerance', () => {
  it.each([
    [2, { kind: 'count', value: 2, mustSucceed: false }],
    ['3', { kind: 'count', value: 3, mustSucceed: false }],
    [0, { kind: 'count', value: 0, mustSucceed: false }],
    [-1, { kind: 'count', value: 1, mustSucceed: true }],
    ['10%', { kind: 'percent', value: 10, mustSucceed: false }],
    [' 12.5% ', { kind: 'percent', value: 12.5, mustSucceed: false }],
    ['-10%', { kind: 'percent', value: 10, mustSucceed: true }],
  ])('%p - reads as %p', (raw, expected) => {
    expect(readFaultTolerance(raw)).toEqual(expected);
  });

  it.each([
    [
      1.5,
      "expected a node count like 2, a percent like '10%', or a negative one like -2 or '-10%' (that many must succeed), got 1.5",
    ],
    [
      'ten',
      "expected a node count like 2, a percent like '10%', or a negative one like -2 or '-10%' (that many must succeed), got \"ten\"",
    ],
    [
      [1],
      "expected a node count like 2, a percent like '10%', or a negative one like -2 or '-10%' (that many must succeed), got a list",
    ],
    ['150%', 'expected a percent between 0% and 100%, got "150%"'],
  ])('%p - rejected', (raw, message) => {
    expect(readFaultTolerance(raw)).toEqual({ code: 'TASK_BAD_FIELD', message });
  });
});

describe('resolveFaultTolerance', () => {
  it.each([
    ['none: one more than the group, so it never fails the run on its own', undefined, 10, 11],
    ['count', { kind: 'count', value: 2, mustSucceed: false }, 10, 2],
    ['count larger than the group is clamped', { kind: 'count', value: 20, mustSucceed: false }, 10, 10],
    ['percent rounds down', { kind: 'percent', value: 10, mustSucceed: false }, 19, 1],
    ['percent of a small group may be 0', { kind: 'percent', value: 10, mustSucceed: false }, 9, 0],
    ['percent with a binary fraction rounds correctly', { kind: 'percent', value: 14.3, mustSucceed: false }, 7, 1],
    ['100% lets the whole group fail', { kind: 'percent', value: 100, mustSucceed: false }, 7, 7],
    ['must-succeed count', { kind: 'count', value: 1, mustSucceed: true }, 5, 4],
    ['must-succeed count larger than the group gives 0', { kind: 'count', value: 8, mustSucceed: true }, 5, 0],
    ['must-succeed percent rounds the successes up', { kind: 'percent', value: 10, mustSucceed: true }, 5, 4],
    ['must-succeed percent exact', { kind: 'percent', value: 50, mustSucceed: true }, 10, 5],
    ['empty group', { kind: 'count', value: 3, mustSucceed: false }, 0, 0],
  ] as const)('%s', (_name, ft, size, expected) => {
    expect(resolveFaultTolerance(ft, size)).toBe(expected);
  });
});

describe("Fuel's calculate_fault_tolerance (fuel-web nailgun/lcm/transaction_serializer.py; test_lcm_transaction_serializer.py, test_get_fault_tolerance)", () => {
  const fromYaml = (raw: unknown, size: number): number => {
    const ft = raw === undefined ? undefined : readFaultTolerance(raw);
    if (ft && 'code' in ft) throw new Error(ft.message);
    return resolveFaultTolerance(ft, size);
  };

  it.each([
    ['absent: unattainable, one more than the group', undefined, 12, 13],
    ['a count as a string', '12', 12, 12],
    ['a count as a number', 12, 12, 12],
    ['a percent, rounded down', '25%', 12, 3],
    ['a negative percent: that share must succeed', ' -25%', 12, 9],
    ['a negative count: that many must succeed', '-3 ', 12, 9],
    ['100% of a one-node group', '100%', 1, 1],
    ['0% of a one-node group', '0%', 1, 0],
    ['absent, one-node group', undefined, 1, 2],
  ])('%s', (_name, raw, size, expected) => {
    expect(fromYaml(raw, size)).toBe(expected);
  });

  it('refuses what Fuel would log and treat as absent (a%), naming what it expected', () => {
    expect(readFaultTolerance('a%')).toMatchObject({ code: 'TASK_BAD_FIELD' });
  });
});
