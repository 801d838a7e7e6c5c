/** Package versions `granule plugin create` can write. */
export const TEMPLATE_PACKAGE_VERSIONS = ['5.0.0', '4.0.0'] as const;
export type TemplatePackageVersion = (typeof TEMPLATE_PACKAGE_VERSIONS)[number];

/** Plugin names `create` accepts: lower-case letters, digits, `_` and `-` (Fuel's rule). */
export const TEMPLATE_NAME_RE = /^[a-z0-9_-]+$/;

/**
 * The files of a new plugin that validates cleanly, as path → content (a path ending in `/`
 * is an empty directory). 5.0.0: node role with `tasks:`, version 2.0.0 deployment tasks;
 * 4.0.0: the same with a legacy-free layout and `mode`/`fuel_version` as 4.0.0 requires.
 */
export function pluginTemplate(name: string, packageVersion: TemplatePackageVersion = '5.0.0'): Record<string, string> {
  const v5 = packageVersion === '5.0.0';
  const role = `${name.replace(/_/g, '-')}-role`;
  const metadata = [
    `# Plugin name: lower-case letters, digits, _ and -`,
    `name: ${name}`,
    `title: ${name} plugin`,
    `version: '1.0.0'`,
    `description: Describe what ${name} deploys`,
    `package_version: '${packageVersion}'`,
    ...(v5 ? [] : [`fuel_version: ['9.0']`]),
    `licenses: ['Apache License Version 2.0']`,
    `authors: ['Your name or company']`,
    `homepage: 'https://example.com/${name}'`,
    `groups: []`,
    `is_hotpluggable: false`,
    `releases:`,
    `  - os: ubuntu`,
    `    version: mitaka-9.0`,
    ...(v5 ? [] : [`    mode: ['ha']`]),
    `    deployment_scripts_path: deployment_scripts/`,
    `    repository_path: repositories/ubuntu`,
    ``,
  ].join('\n');
  const tasks = [
    `# Deployment tasks (version 2.0.0: task-based deployment).`,
    `- id: ${name}-install`,
    `  type: shell`,
    `  version: 2.0.0`,
    `  roles: ['${role}']`,
    `  requires: [${name}-prepare]`,
    `  parameters:`,
    `    cmd: bash ./deploy.sh`,
    `    timeout: 600`,
    ``,
    `- id: ${name}-prepare`,
    `  type: shell`,
    `  version: 2.0.0`,
    `  roles: ['${role}']`,
    `  parameters:`,
    `    cmd: echo preparing ${name}`,
    `    timeout: 60`,
    ``,
  ];
  const nodeRoles = [
    `${role}:`,
    `  name: ${name} role`,
    `  description: Nodes that run ${name}`,
    `  has_primary: false`,
    `  public_ip_required: false`,
    `  weight: 1000`,
    ...(v5
      ? [
          `  # Tasks this role runs; Granule makes the role's group task from this list.`,
          `  tasks: [${name}-prepare, ${name}-install]`,
        ]
      : []),
    ``,
  ];
  const files: Record<string, string> = {
    'metadata.yaml': metadata,
    'environment_config.yaml': [
      `attributes:`,
      `  metadata:`,
      `    label: ${name}`,
      `    group: other`,
      `  ${name}_text:`,
      `    type: text`,
      `    label: Example setting`,
      `    weight: 10`,
      `    value: 'default'`,
      ``,
    ].join('\n'),
    'node_roles.yaml': nodeRoles.join('\n'),
    'deployment_tasks.yaml': tasks.join('\n'),
    'volumes.yaml': [
      `volumes_roles_mapping:`,
      `  ${role}:`,
      `    - {allocate_size: min, id: os}`,
      `volumes: []`,
      ``,
    ].join('\n'),
    'deployment_scripts/deploy.sh': `#!/bin/bash\nset -eu\necho "${name} deployed" >> "\${GRANULE_ROOT:-.}/${name}.log"\n`,
    'repositories/ubuntu/': '',
  };
  if (!v5) {
    files['deployment_tasks.yaml'] = [
      `- id: ${role}`,
      `  type: group`,
      `  version: 2.0.0`,
      `  roles: ['${role}']`,
      `  tasks: [${name}-prepare, ${name}-install]`,
      `  parameters:`,
      `    strategy:`,
      `      type: parallel`,
      ``,
      ...tasks,
    ].join('\n');
  }
  return files;
}
