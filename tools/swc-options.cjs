// Shared swc options for the build and for jest, derived from tsconfig.base.json so the
// path aliases (@granule/*) live in one place.
const path = require('node:path');
const fs = require('node:fs');

const root = path.resolve(__dirname, '..');
const tsconfig = JSON.parse(fs.readFileSync(path.join(root, 'tsconfig.base.json'), 'utf8'));
const paths = tsconfig.compilerOptions.paths;

function swcOptions() {
  return {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
      keepClassNames: true,
      baseUrl: root,
      paths,
    },
    module: { type: 'commonjs' },
    sourceMaps: true,
  };
}

function jestModuleNameMapper() {
  const mapper = {};
  for (const [alias, targets] of Object.entries(paths)) {
    mapper[`^${alias.replace(/[/\\^$*+?.()|[\]{}-]/g, '\\$&')}$`] = path.join(root, targets[0]);
  }
  return mapper;
}

module.exports = { root, paths, swcOptions, jestModuleNameMapper };
