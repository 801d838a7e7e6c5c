/** Seed 002's worked example (group strategies). The seed's `primar-controller` typo is fixed. */
export const SEED_002_GROUPS = `
- id: deploy
  type: stage
- id: primary-controller
  type: group
  role: [primary-controller]
  required_for: [deploy]
  parameters:
    strategy:
      type: one_by_one
- id: controller
  type: group
  role: [controller]
  requires: [primary-controller]
  required_for: [deploy]
  parameters:
    strategy:
      type: parallel
      amount: 2
- id: cinder
  type: group
  role: [cinder]
  requires: [controller]
  required_for: [deploy]
  parameters:
    strategy:
      type: parallel
- id: compute
  type: group
  role: [compute]
  requires: [controller]
  required_for: [deploy]
  parameters:
    strategy:
      type: parallel
- id: network
  type: group
  role: [network]
  requires: [controller]
  required_for: [compute, deploy]
  parameters:
    strategy:
      type: parallel
- id: setup_services
  type: puppet
  requires: [setup_network]
  groups: [controller, primary-controller, compute, network, cinder]
  required_for: [deploy]
  parameters:
    puppet_manifest: /etc/puppet/manifests/controller.pp
    puppet_modules: /etc/puppet/modules
    timeout: 360
- id: setup_network
  type: shell
  groups: [controller, primary-controller, compute, network, cinder]
  required_for: [deploy]
  parameters:
    cmd: run_setup_network.sh
    timeout: 120
`;

/** primary-controller: [node-1]; controller: [node-4, node-2, node-3, node-5]; cinder: [node-6]; network: [node-7]; compute: [node-8]. */
export const SEED_002_NODES = [
  { uid: 'node-1', roles: ['primary-controller'] },
  { uid: 'node-4', roles: ['controller'] },
  { uid: 'node-2', roles: ['controller'] },
  { uid: 'node-3', roles: ['controller'] },
  { uid: 'node-5', roles: ['controller'] },
  { uid: 'node-6', roles: ['cinder'] },
  { uid: 'node-7', roles: ['network'] },
  { uid: 'node-8', roles: ['compute'] },
];
