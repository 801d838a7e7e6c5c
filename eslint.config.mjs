import nx from '@nx/eslint-plugin';

// Layering (docs/architecture.md): apps -> infra -> domain; contracts are shared by all.
// type:domain libs are pure: no framework, database, broker or cache client may be imported.
// They may use contracts' plain types (event and command shapes); the contracts' class-validator
// DTOs live behind the separate entry point @granule/contracts/dto, which domain code never imports.
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
              onlyDependOnLibsWithTags: ['type:domain', 'type:contracts'],
              bannedExternalImports: frameworkImports,
            },
            { sourceTag: 'type:contracts', onlyDependOnLibsWithTags: ['type:domain', 'type:contracts'] },
            { sourceTag: 'type:infra', onlyDependOnLibsWithTags: ['type:domain', 'type:contracts', 'type:infra'] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:domain', 'type:contracts', 'type:infra'] },
            {
              sourceTag: 'type:test',
              onlyDependOnLibsWithTags: ['type:domain', 'type:contracts', 'type:infra', 'type:app'],
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
    // Domain libraries never load the contracts' validation DTOs.
    files: [
      'libs/{core,task-model,conditions,planner,deployment-strategy,plugin,execution,orchestration,config-domain}/src/**/*.ts',
    ],
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
