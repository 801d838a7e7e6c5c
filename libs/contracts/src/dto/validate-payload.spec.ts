import { AssignNodeRequest, CreateEnvironmentRequest, GetTasksRequest } from './config-store.dto';
import { validatePayload } from './validate-payload';

const problems = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (err) {
    return (err as { diagnostics: { path?: string; message: string }[] }).diagnostics.map(
      (d) => `${d.path ?? ''}: ${d.message}`,
    );
  }
  throw new Error('expected a refusal');
};

describe('validatePayload', () => {
  it('returns the typed request when the payload is valid', () => {
    const req = validatePayload(GetTasksRequest, { scope: 'release', id: '1', start: 'netconfig' });
    expect(req).toBeInstanceOf(GetTasksRequest);
    expect({ ...req }).toEqual({ scope: 'release', id: '1', start: 'netconfig' });
  });

  it('names every bad field, what was expected and what was found', () => {
    expect(
      problems(() => validatePayload(CreateEnvironmentRequest, { name: 'a b', plugins: 'x', settings: [] })),
    ).toEqual([
      `name: expected an environment name of 1 to 63 letters, digits, '_', '.' or '-', starting with a letter or digit, got "a b"`,
      'settings: must be an object (got a list)',
      'plugins: must not name a plugin twice; must be an array (got "x")',
    ]);
  });

  it('refuses unknown fields and non-object payloads', () => {
    expect(
      problems(() =>
        validatePayload(AssignNodeRequest, { uid: 'n', environment: 'e', roles: ['a', 'bad role'], colour: 1 }),
      ),
    ).toEqual([
      "colour: unknown field 'colour'",
      'roles: each entry must be a role name of letters, digits, _ . - (got a list)',
    ]);
    expect(problems(() => validatePayload(AssignNodeRequest, [1]))).toEqual([': expected a JSON object, got a list']);
  });
});
