import { readFileSync } from 'node:fs';
import path from 'node:path';

/** Seed 002's worked example (group strategies). The seed's `primar-controller` typo is fixed. */
export const SEED_002_GROUPS = readFileSync(path.join(__dirname, 'seed-002-deployment_tasks.yaml'), 'utf8');

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
