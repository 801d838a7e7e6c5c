// One jest run, three tiers, told apart by the file name (see docs/architecture.md).
const { swcOptions, jestModuleNameMapper } = require('./tools/swc-options.cjs');

const base = {
  rootDir: __dirname,
  // Node's, and a DeprecationWarning fails the test that caused it.
  testEnvironment: '<rootDir>/tools/jest-environment.cjs',
  // NestJS 12 ships ES modules, which jest's CommonJS loader cannot require: swc turns them into
  // CommonJS as it does our TypeScript (the services themselves load them with Node's require(esm)).
  transform: { '^.+\\.(ts|js)$': ['@swc/jest', { ...swcOptions(), swcrc: false }] },
  transformIgnorePatterns: ['/node_modules/(?!@nestjs/)'],
  moduleNameMapper: jestModuleNameMapper(),
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/test'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
};

module.exports = {
  projects: [
    { ...base, displayName: 'unit', testRegex: '(?<!\\.(int|e2e))\\.spec\\.ts$' },
    { ...base, displayName: 'int', testRegex: '\\.int\\.spec\\.ts$' },
    // An e2e test starts processes (each CLI call is a Node.js process of about a second): the
    // 5 s default fails a test of a few CLI calls on a loaded CI machine.
    {
      ...base,
      displayName: 'e2e',
      testRegex: '\\.e2e\\.spec\\.ts$',
      setupFilesAfterEnv: ['<rootDir>/tools/jest-e2e-timeout.cjs'],
    },
  ],
};
