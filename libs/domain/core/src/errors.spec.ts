import { formatDiagnostic, InvalidInputError } from './errors';

describe('formatDiagnostic', () => {
  it('names the file, line, key path and task', () => {
    expect(
      formatDiagnostic({
        severity: 'error',
        code: 'X',
        message: 'expected a number, got "ten"',
        file: 'tasks.yaml',
        line: 4,
        path: '[3].parameters.timeout',
        taskId: 'netconfig',
      }),
    ).toBe('tasks.yaml:4: [3].parameters.timeout: task \'netconfig\': expected a number, got "ten"');
  });

  it('keeps only errors in the message of InvalidInputError', () => {
    const err = new InvalidInputError([
      { severity: 'warning', code: 'W', message: 'deprecated' },
      { severity: 'error', code: 'E', message: 'broken', file: 'a.yaml' },
    ]);
    expect(err.message).toBe('a.yaml: broken');
    expect(err.code).toBe('INVALID_INPUT');
  });

  it('escapes control characters from user data, so no raw bytes reach a terminal', () => {
    expect(
      formatDiagnostic({ severity: 'error', code: 'X', path: 'labels.\u001b[2J', message: "unknown field 'a\u0000b'" }),
    ).toBe("labels.\\u001b[2J: unknown field 'a\\u0000b'");
  });
});
