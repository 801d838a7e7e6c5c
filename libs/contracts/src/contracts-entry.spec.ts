import { readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

// Domain libs import @granule/contracts for plain types and a few pure values; loading it must not
// load a validation framework. This walks what the compiled entry would `require` at runtime:
// every import/export that survives compilation, followed through relative files and @granule/*
// aliases; type-only imports and `import('x')` types are erased and skipped.

const repoRoot = path.resolve(__dirname, '../../..');
const aliases: Record<string, string[]> = JSON.parse(readFileSync(path.join(repoRoot, 'tsconfig.base.json'), 'utf8'))
  .compilerOptions.paths;
const VALIDATION_LIBS = ['class-validator', 'class-transformer', 'reflect-metadata'];

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function resolveLocal(fromFile: string, specifier: string): string | undefined {
  let base: string;
  if (specifier.startsWith('.')) base = path.resolve(path.dirname(fromFile), specifier);
  else if (aliases[specifier]) return path.join(repoRoot, aliases[specifier][0]);
  else if (specifier.startsWith('@granule/'))
    throw new Error(`${fromFile}: '${specifier}' is not a path alias of tsconfig.base.json`);
  else return undefined;
  const found = [`${base}.ts`, path.join(base, 'index.ts'), base].find(isFile);
  if (!found) throw new Error(`${fromFile}: cannot resolve '${specifier}'`);
  return found;
}

/** Module specifiers a file loads at runtime. Conservative: `import { type A }` counts (only `import type` is sure to be erased). */
function runtimeSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      if (!node.importClause?.isTypeOnly) found.push((node.moduleSpecifier as ts.StringLiteral).text);
      return;
    }
    if (ts.isExportDeclaration(node)) {
      if (node.moduleSpecifier && !node.isTypeOnly) found.push((node.moduleSpecifier as ts.StringLiteral).text);
      return;
    }
    if (ts.isImportEqualsDeclaration(node)) {
      if (!node.isTypeOnly && ts.isExternalModuleReference(node.moduleReference))
        found.push((node.moduleReference.expression as ts.StringLiteral).text);
      return;
    }
    if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword ||
        (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    ) {
      const [arg] = node.arguments;
      if (!arg || !ts.isStringLiteralLike(arg))
        throw new Error(`${file}: a dynamic import/require of a computed name cannot be checked`);
      found.push(arg.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The runtime import graph from `entry`: the workspace files it loads and the packages it requires. */
function runtimeGraph(entry: string): { files: string[]; packages: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (files.has(file)) continue;
    files.add(file);
    for (const specifier of runtimeSpecifiers(file)) {
      const local = resolveLocal(file, specifier);
      if (local) pending.push(local);
      else packages.add(specifier);
    }
  }
  return { files: [...files].map((f) => path.relative(repoRoot, f)).sort(), packages: [...packages].sort() };
}

const validationLibs = (packages: string[]): string[] =>
  packages.filter((p) => VALIDATION_LIBS.some((lib) => p === lib || p.startsWith(`${lib}/`)));

describe('@granule/contracts entry points', () => {
  it('the main entry loads no validation library at runtime', () => {
    const graph = runtimeGraph(path.join(__dirname, 'index.ts'));
    expect(validationLibs(graph.packages)).toEqual([]);
    expect(graph.files.filter((f) => f.startsWith('libs/contracts/src/dto/'))).toEqual([]);
    // The walk reached the config-store values it must keep (so an empty result above means something).
    expect(graph.files).toContain('libs/contracts/src/config-store/config-store.api.ts');
  });

  it('the dto entry loads class-validator, class-transformer and reflect-metadata (the walk sees them)', () => {
    const graph = runtimeGraph(path.join(__dirname, 'dto/index.ts'));
    expect(validationLibs(graph.packages)).toEqual(['class-transformer', 'class-validator', 'reflect-metadata']);
    expect(graph.files).toEqual(
      expect.arrayContaining([
        'libs/contracts/src/dto/config-store.dto.ts',
        'libs/contracts/src/dto/config-store.requests.ts',
        'libs/contracts/src/dto/validate-payload.ts',
      ]),
    );
  });

  it('does not follow type-only imports', () => {
    const graph = runtimeGraph(path.join(__dirname, 'config-store/config-store.api.ts'));
    // config-store.api.ts refers to the request classes only through `import type`.
    expect(graph.files).toEqual(['libs/contracts/src/config-store/config-store.api.ts']);
    expect(graph.packages).toEqual([]);
  });
});
