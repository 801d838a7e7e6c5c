// One jest run, three tiers, told apart by the file name (see docs/architecture.md).
const { swcOptions, jestModuleNameMapper } = require('./tools/swc-options.cjs');

const base = {
  rootDir: __dirname,
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { ...swcOptions(), swcrc: false }] },
  moduleNameMapper: jestModuleNameMapper(),
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/test'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
};

module.exports = {
  projects: [
    { ...base, displayName: 'unit', testRegex: '(?<!\\.(int|e2e))\\.spec\\.ts$' },
    { ...base, displayName: 'int', testRegex: '\\.int\\.spec\\.ts$' },
    { ...base, displayName: 'e2e', testRegex: '\\.e2e\\.spec\\.ts$' },
  ],
};
