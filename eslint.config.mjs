import { createProjectGraphAsync } from '@nx/devkit';
import nx from '@nx/eslint-plugin';

// Layering (docs/architecture.md), as the folders show it:
//   apps -> libs/infra -> libs/application -> libs/domain; libs/contracts are shared by all.
// type:domain and type:application libs are pure: no framework, database, broker or cache client.
// They may use contracts' plain types (event and command shapes); the contracts' class-validator
// DTOs live behind the separate entry point @granule/contracts/dto, which pure code never imports.

// The boundaries rule reads Nx's project graph and, when none is cached, skips itself with a
// warning that --max-warnings does not count. Building the graph here makes a missing or broken
// graph fail the lint run instead of silently passing a banned import.
await createProjectGraphAsync({ exitOnError: true });
const frameworkImports = [
  '@nestjs/*',
  'typeorm',
  'pg',
  'ioredis',
  'nats',
  '@nats-io/*',
  'class-validator',
  'class-transformer',
];

export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  { ignores: ['**/dist', '**/node_modules', '**/tmp', 'examples/**', 'helm/**'] },
  {
    files: ['**/*.ts'],
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            {
              sourceTag: 'type:domain',
              onlyDependOnLibsWithTags: ['type:domain'],
              bannedExternalImports: frameworkImports,
            },
            {
              sourceTag: 'type:application',
              onlyDependOnLibsWithTags: ['type:domain', 'type:contracts', 'type:application'],
              bannedExternalImports: frameworkImports,
            },
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:domain', 'type:contracts'] },
            {
              sourceTag: 'type:infra',
              onlyDependOnLibsWithTags: ['type:domain', 'type:contracts', 'type:application', 'type:infra'],
            },
            {
              sourceTag: 'type:app',
              onlyDependOnLibsWithTags: ['type:domain', 'type:contracts', 'type:application', 'type:infra'],
            },
            {
              sourceTag: 'type:test',
              onlyDependOnLibsWithTags: ['type:domain', 'type:contracts', 'type:application', 'type:infra', 'type:app'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-eval': 'error',
      'no-new-func': 'error',
      'no-implied-eval': 'error',
    },
  },
  {
    // Tests speak through assertions: a console line in a spec ends up in every CI log.
    files: ['**/*.spec.ts', 'test/**/*.ts', '**/testing/**/*.ts'],
    rules: { 'no-console': 'error' },
  },
  {
    // Pure libraries never load the contracts' validation DTOs.
    files: ['libs/domain/*/src/**/*.ts', 'libs/application/*/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@granule/contracts/dto',
              message: 'domain code uses the plain contract types from @granule/contracts',
            },
          ],
        },
      ],
    },
  },
];
