// docs/messages.md: a message that suggests a command writes it `granule ...`, as the operator
// types it once the CLI is installed — never `./granule ...`, the checkout's script. This reads
// every source file the services, the CLI and the libraries are built from and fails on a string
// (or template) that says `./granule`, wherever it ends up: an error, a hint, a help text.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');

/** Strings that must say `./granule`: the completion script completes the checkout's script too. */
const ALLOWED: Record<string, string> = {
  'apps/cli/src/commands/completion.command.ts': 'registers completion for granule and ./granule',
};

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') out.push(...sourceFiles(full));
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') && !entry.name.endsWith('.d.ts'))
      out.push(full);
  }
  return out;
}

/** Every `src` folder under apps/* and libs/** (libs nest: libs/domain/planner/src). */
function srcFolders(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === 'node_modules') continue;
    const full = path.join(dir, entry.name);
    if (entry.name === 'src') out.push(full);
    else out.push(...srcFolders(full));
  }
  return out;
}

/** `./granule` as a command, not a module such as './granule-metrics'. */
const DOT_SLASH_GRANULE = /\.\/granule(?![\w.-])/;

/** The string literals and template parts of a file that say `./granule`, as FILE:LINE: TEXT. */
export function dotSlashGranuleStrings(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node)
    ) {
      if (DOT_SLASH_GRANULE.test(node.text)) {
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        found.push(`${file}:${line}: ${node.text}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('messages - hints write "granule ...", never "./granule ..."', () => {
  const files = [...srcFolders(path.join(ROOT, 'apps')), ...srcFolders(path.join(ROOT, 'libs'))].flatMap(sourceFiles);

  it('reads the sources of every app and library', () => {
    const rel = files.map((f) => path.relative(ROOT, f));
    expect(rel).toEqual(
      expect.arrayContaining([
        'apps/config-store/src/services/catalog.service.ts',
        'libs/infra/secrets/src/secret-box.ts',
        'libs/domain/config-model/src/config-store.errors.ts',
      ]),
    );
  });

  it('finds a "./granule" in a string, a template and a template part, and not in a comment or an import', () => {
    const text = [
      "import { m } from './granule-metrics';",
      '// run ./granule plan',
      "const a = 'run ./granule plan';",
      'const b = `run ./granule plan`;',
      'const c = `${x}: run ./granule release remove ${id}`;',
      "const d = 'run granule plan';",
    ].join('\n');
    expect(dotSlashGranuleStrings('x.ts', text)).toEqual([
      'x.ts:3: run ./granule plan',
      'x.ts:4: run ./granule plan',
      'x.ts:5: : run ./granule release remove ',
    ]);
  });

  it('no source string says "./granule"', () => {
    const found = files
      .filter((f) => !(path.relative(ROOT, f) in ALLOWED))
      .flatMap((f) => dotSlashGranuleStrings(path.relative(ROOT, f), readFileSync(f, 'utf8')));
    expect(found).toEqual([]);
  });
});
