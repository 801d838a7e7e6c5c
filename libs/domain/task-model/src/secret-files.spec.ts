import { parse } from 'yaml';
import { sealDataFileText } from './secret-files';
import type { Seal } from './sensitive-values';

const seal: Seal = (v) => ({ $sealed: `S-${String(v)}` });

describe('sealDataFileText', () => {
  const tasks = [
    '# deployment tasks',
    '- id: db',
    '  type: shell',
    '  roles: [controller]',
    '  sensitive: [DB_USER]',
    '  parameters:',
    '    cmd: ./db.sh   # keeps its comment',
    '    env: {DB_USER: admin, DB_PASSWORD: "hunter2"}',
    '    api_token: |',
    '      multi',
    '      line',
    '- id: hello',
    '  type: shell',
    '  parameters: {cmd: echo hi}',
    '',
  ].join('\n');

  it('YAML - seals each secret in place; comments, order and the lines before a secret stay', () => {
    const out = sealDataFileText('deployment_tasks.yaml', tasks, seal);
    expect(out.clear).toEqual([]);
    const lines = out.text.split('\n');
    // Spaces may change (the yaml library prints the document again); lines and comments do not.
    const squeeze = (l: string): string => l.replace(/\s+/g, ' ');
    expect(lines.slice(0, 7).map(squeeze)).toEqual(tasks.split('\n').slice(0, 7).map(squeeze));
    expect(lines[7]).toBe('    env: {DB_USER: {$sealed: S-admin}, DB_PASSWORD: {$sealed: S-hunter2}}');
    expect(lines[8]).toBe('    api_token: {$sealed: "S-multi\\nline\\n"}');
    expect(lines[9]).toBe('- id: hello');

    expect(parse(out.text)).toEqual([
      {
        id: 'db',
        type: 'shell',
        roles: ['controller'],
        sensitive: ['DB_USER'],
        parameters: {
          cmd: './db.sh',
          env: { DB_USER: { $sealed: 'S-admin' }, DB_PASSWORD: { $sealed: 'S-hunter2' } },
          api_token: { $sealed: 'S-multi\nline\n' },
        },
      },
      { id: 'hello', type: 'shell', parameters: { cmd: 'echo hi' } },
    ]);
    expect(out.text).not.toMatch(/hunter2"|: admin/);
  });

  it('without a seal, the text is unchanged and every secret is listed with its task', () => {
    const out = sealDataFileText('deployment_tasks.yaml', tasks);
    expect(out.text).toBe(tasks);
    expect(out.clear).toEqual([
      { path: [0, 'parameters', 'env', 'DB_USER'] },
      { path: [0, 'parameters', 'env', 'DB_PASSWORD'] },
      { path: [0, 'parameters', 'api_token'] },
    ]);
  });

  it('a file with no secret comes back byte for byte, as does one that does not parse', () => {
    const plain = '- id: a\n  type: shell\n  parameters: {cmd: "echo  a"}   # odd spacing kept\n';
    expect(sealDataFileText('t.yaml', plain, seal).text).toBe(plain);
    const broken = '- id: a\n  type: [shell\n';
    expect(sealDataFileText('t.yaml', broken, seal)).toEqual({ text: broken, clear: [] });
  });

  it('environment_config.yaml - setting leaves marked password, sensitive or by name', () => {
    const text = [
      'attributes:',
      '  admin_password: {value: pw1, label: Admin, type: text, weight: 10}',
      '  vault: {value: pw2, label: Vault, type: password, weight: 20}',
      '  debug: {value: false, label: Debug, type: checkbox, weight: 30}',
      '',
    ].join('\n');
    const out = sealDataFileText('environment_config.yaml', text, seal);
    expect(parse(out.text)).toEqual({
      attributes: {
        admin_password: { value: { $sealed: 'S-pw1' }, label: 'Admin', type: 'text', weight: 10 },
        vault: { value: { $sealed: 'S-pw2' }, label: 'Vault', type: 'password', weight: 20 },
        debug: { value: false, label: 'Debug', type: 'checkbox', weight: 30 },
      },
    });
  });

  it('JSON files are sealed too', () => {
    const out = sealDataFileText(
      'tasks.json',
      '[{"id":"a","type":"shell","parameters":{"cmd":"x","password":"p"}}]',
      seal,
    );
    expect(JSON.parse(out.text)).toEqual([
      { id: 'a', type: 'shell', parameters: { cmd: 'x', password: { $sealed: 'S-p' } } },
    ]);
  });

  it('a secret written through an anchor or alias is refused, not left in clear at its anchor', () => {
    const text = [
      'x-secret: &pw hunter2',
      'tasks:',
      '  - id: a',
      '    type: shell',
      '    parameters: {cmd: x, password: *pw}',
      '',
    ].join('\n');
    expect(() => sealDataFileText('t.yaml', text, seal)).toThrow(
      'a secret written through a YAML anchor, alias or merge key cannot be sealed in place: write it out',
    );
  });
});
