import { IDENTIFIER_RULES } from '@granule/core';
import { Schema, list, obj, str, strings } from './schema-check';

// Field lists follow Fuel Plugin Builder's schemas for packages 4.0.0 and 5.0.0; names follow
// Granule's identifier rules (libs/domain/core), which the config-store applies too.
const NAME = IDENTIFIER_RULES.pluginName.pattern;
const RELEASE_NAME = IDENTIFIER_RULES.releaseName.pattern;
const TASK_NAME = /^[0-9a-zA-Z_-]+$|^\*$/;
const NETWORK_ROLE = /^[0-9a-z_-]+$/;
const COMPONENT_TYPES = 'hypervisor|network|storage|additional_service';
const COMPONENT_NAME = new RegExp(`^(${COMPONENT_TYPES}):([0-9a-z_-]+:)*[0-9a-z_-]+$`);
const COMPATIBLE_NAME = new RegExp(`^(${COMPONENT_TYPES}):([0-9a-z_-]+:)*([0-9a-z_-]+|(\\*)?)$`);

export const PLUGIN_GROUPS = [
  'network',
  'storage',
  'storage::cinder',
  'storage::glance',
  'hypervisor',
  'monitoring',
  'equipment',
] as const;

const constraintProps: Record<string, Schema> = { 'os-version': { t: 'any' }, 'fuel-version': { t: 'any' } };

const metadataProps: Record<string, Schema> = {
  name: str({ pattern: NAME, expected: `a plugin name of ${IDENTIFIER_RULES.pluginName.rule}` }),
  title: str(),
  version: str(),
  package_version: str(),
  description: str(),
  fuel_version: strings,
  licenses: strings,
  authors: strings,
  homepage: str(),
  groups: list(str({ enum: PLUGIN_GROUPS }), { unique: true }),
  is_hotpluggable: { t: 'boolean' },
  // A plugin that names no release can be neither planned nor installed.
  releases: list({ t: 'object' }, { minItems: 1 }),
};

/** metadata.yaml by package version. */
export const METADATA_SCHEMAS: Record<'4.0.0' | '5.0.0', Schema> = {
  '4.0.0': obj(
    metadataProps,
    [
      'name',
      'title',
      'version',
      'package_version',
      'description',
      'fuel_version',
      'licenses',
      'authors',
      'homepage',
      'releases',
      'groups',
      'is_hotpluggable',
    ],
    'warn',
  ),
  '5.0.0': obj(
    metadataProps,
    ['name', 'title', 'version', 'package_version', 'description', 'licenses', 'authors', 'homepage', 'releases'],
    'warn',
  ),
};

const graphSchema = obj({ type: str(), name: str(), tasks: list(), tasks_path: str() }, ['type']);

const releaseProps: Record<string, Schema> = {
  version: str(),
  os: str(),
  operating_system: str(),
  mode: list(str({ enum: ['ha', 'multinode'] })),
  deployment_scripts_path: str(),
  repository_path: str(),
  conf_path: str(),
  release_name: str({ pattern: RELEASE_NAME, expected: `a release name of ${IDENTIFIER_RULES.releaseName.rule}` }),
  name: str(),
  description: str(),
  is_release: { t: 'boolean' },
  graphs: list(graphSchema),
};

/** A release a plugin extends (`releases: [{os, version, mode, ...}]`). */
export function extensionReleaseSchema(packageVersion: string): Schema {
  return obj(
    releaseProps,
    packageVersion === '4.0.0'
      ? ['version', ['os', 'operating_system'], 'mode']
      : ['version', ['os', 'operating_system']],
  );
}

/** A release a plugin defines (`is_release: true`, seed 003). */
export const RELEASE_SCHEMA: Schema = obj(releaseProps, [
  'release_name',
  'description',
  ['operating_system', 'os'],
  'version',
]);

const attributeSchema: Schema = obj(
  {
    type: str(),
    label: str(),
    weight: { t: 'integer' },
    value: { t: 'any' },
    description: str(),
    restrictions: list(),
    values: list(),
    // Granule: the value is a secret (sealed when stored, masked when shown; ADR 0023).
    sensitive: { t: 'boolean' },
  },
  ['type', 'label', 'value'],
);

const roleSchema: Schema = obj(
  {
    ...constraintProps,
    name: str(),
    description: str(),
    conflicts: { t: 'oneOf', options: [strings, str({ enum: ['*'] })], expected: "a list of role names or '*'" },
    has_primary: { t: 'boolean' },
    public_ip_required: { t: 'boolean' },
    update_required: strings,
    update_once: strings,
    weight: { t: 'integer' },
    limits: { t: 'object' },
    restrictions: list(),
    tasks: list(str({ pattern: TASK_NAME, expected: 'a task id' })),
    fault_tolerance: { t: 'any' },
    parameters: { t: 'object' },
    strategy: { t: 'object' },
  },
  ['name', 'description'],
  'warn',
);

const componentRefs = list(
  obj(
    {
      name: str({ pattern: COMPATIBLE_NAME, expected: "a component name like 'hypervisor:libvirt:*'" }),
      message: str(),
    },
    ['name'],
  ),
);

/** Schemas of the configuration files other than the task files (checked by the task parser). */
export const CONF_SCHEMAS = {
  environment_config: obj(
    { attributes: { t: 'object', props: { metadata: { t: 'object' } }, values: attributeSchema } },
    ['attributes'],
  ),
  node_role: roleSchema,
  volumes: obj(
    {
      volumes_roles_mapping: {
        t: 'object',
        keyPattern: TASK_NAME,
        values: list(
          obj({ allocate_size: str({ enum: ['all', 'min', 'full-disk'] }), id: str() }, ['allocate_size', 'id']),
          { minItems: 1 },
        ),
      },
      volumes: list(obj({ ...constraintProps, id: str(), type: str() }, ['id', 'type'])),
    },
    ['volumes_roles_mapping', 'volumes'],
  ),
  network_roles: list(
    obj(
      {
        ...constraintProps,
        id: str(),
        default_mapping: str(),
        properties: obj(
          {
            subnet: { t: 'boolean' },
            gateway: { t: 'boolean' },
            vip: list(
              obj(
                {
                  name: str({ pattern: NETWORK_ROLE, expected: 'a name of a-z, 0-9, _ and -' }),
                  namespace: str({ pattern: NETWORK_ROLE, expected: 'a name of a-z, 0-9, _ and -' }),
                },
                ['name'],
              ),
            ),
          },
          ['subnet', 'gateway', 'vip'],
        ),
      },
      ['id', 'default_mapping', 'properties'],
    ),
  ),
  components: list(
    obj(
      {
        ...constraintProps,
        name: str({ pattern: COMPONENT_NAME, expected: "a component name like 'network:neutron:my-plugin'" }),
        label: str(),
        description: str(),
        compatible: componentRefs,
        requires: componentRefs,
        incompatible: componentRefs,
        bind: list(),
      },
      ['name', 'label'],
      'warn',
    ),
  ),
  attributes: { t: 'object' } as Schema,
};
