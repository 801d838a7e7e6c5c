import { taskLogProblem } from './task-log-intake';

const ok = {
  runId: 'r1',
  key: 'install@n1',
  node: 'n1',
  attempt: 1,
  try: 1,
  seq: 0,
  chunks: [{ stream: 'stdout', at: 1, data: 'hello\n' }],
};

describe('taskLogProblem', () => {
  it('takes a message of the node its subject names', () => {
    expect(taskLogProblem(ok, 'n1')).toBeUndefined();
  });

  it('refuses output for another node than the subject names, or a task of another node', () => {
    expect(taskLogProblem(ok, 'n2')).toBe('it names node n1 but came on the subject of n2');
    expect(taskLogProblem({ ...ok, key: 'install@n2' }, 'n1')).toBe('task install@n2 is not on node n1');
  });

  it('refuses a shape it cannot store, saying what is wrong', () => {
    expect(taskLogProblem(null, 'n1')).toBe('not an object');
    expect(taskLogProblem({ ...ok, try: -1 }, 'n1')).toBe('attempt, try and seq must be small whole numbers');
    expect(taskLogProblem({ ...ok, chunks: [{ stream: 'stdin', at: 1, data: '' }] }, 'n1')).toBe(
      'each chunk needs stream stdout or stderr',
    );
    expect(taskLogProblem({ ...ok, chunks: [{ stream: 'stdout', data: 'x' }] }, 'n1')).toBe(
      'each chunk needs data (text) and at (ms)',
    );
    expect(taskLogProblem({ ...ok, cut: { droppedBytes: 'lots' } }, 'n1')).toBe('cut.droppedBytes must be a number');
  });
});
