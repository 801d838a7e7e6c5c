import { matchesNode } from '@granule/task-model';
import type { NodeSpec, RoleSelector } from '@granule/task-model';
import { EXEC, GROUP, STAGE } from './plan-context';
import type { GroupLayout, LocalRef, PlanInput, Signature } from './plan-context';
import { MASTER_NODE } from './plan-types';

function signatureKey(node: NodeSpec): string {
  return `${[...node.roles].sort().join(',')}|${[...(node.tags ?? [])].sort().join(',')}|${node.uid === MASTER_NODE ? 'm' : ''}`;
}

/** True when some single role or tag of `node` is selected by both selectors. */
function sharesRole(a: RoleSelector, b: RoleSelector, node: NodeSpec): boolean {
  for (const role of node.roles) {
    const one: NodeSpec = { uid: node.uid, roles: [role] };
    if (matchesNode(a, one) && matchesNode(b, one)) return true;
  }
  for (const tag of node.tags ?? []) {
    const one: NodeSpec = { uid: node.uid, roles: [], tags: [tag] };
    if (matchesNode(a, one) && matchesNode(b, one)) return true;
  }
  return a.kind === 'master' && b.kind === 'master' && node.uid === MASTER_NODE;
}

/** Which tasks run on such a node, their group there, and their same-node predecessors. */
function computeSignature(node: NodeSpec, input: PlanInput, groups: GroupLayout): Signature {
  const { tasks, taskKind, tpreds } = input;
  const groupsHere = groups.task
    .map((g, gi) => ({ g, gi }))
    .filter(({ g }) => tasks[g].roles !== null && matchesNode(tasks[g].roles as RoleSelector, node))
    .sort((a, b) => (groups.rank.get(a.g) ?? 0) - (groups.rank.get(b.g) ?? 0) || a.gi - b.gi);
  const hereSet = new Set(groupsHere.map(({ gi }) => gi));
  const present = new Uint8Array(tasks.length);
  const member = new Int32Array(tasks.length).fill(-1);
  tasks.forEach((t, i) => {
    if (taskKind[i] !== EXEC) return;
    const listing = (groups.listedIn.get(i) ?? []).filter((gi) => hereSet.has(gi));
    const selected = t.roles !== null && matchesNode(t.roles, node);
    if (!selected && listing.length === 0) return;
    present[i] = 1;
    if (t.stage || input.stageBound[i]) return; // tasks of a pre/post stage belong to it, not to a group
    const owner = groupsHere.find(
      ({ g, gi }) =>
        listing.includes(gi) || (t.roles !== null && sharesRole(t.roles, tasks[g].roles as RoleSelector, node)),
    );
    if (owner) member[i] = owner.gi;
  });

  const absentMemo = new Map<number, LocalRef[]>();
  const resolve = (u: number, visiting: Set<number>): LocalRef[] => {
    if (taskKind[u] === STAGE) return [{ kind: 'stage', task: u }];
    if (taskKind[u] === GROUP) return [{ kind: 'group', task: u }];
    if (present[u]) return [{ kind: 'local', task: u }];
    const memo = absentMemo.get(u);
    if (memo) return memo;
    if (visiting.has(u)) return [];
    visiting.add(u);
    const out = tpreds[u].flatMap((w) => resolve(w, visiting));
    visiting.delete(u);
    absentMemo.set(u, out);
    return out;
  };
  const localPreds = tasks.map((_, t) => (present[t] ? tpreds[t].flatMap((u) => resolve(u, new Set())) : []));
  const memberSources = new Map<number, number[]>();
  const memberSinks = new Map<number, number[]>();
  const hasMemberSucc = new Uint8Array(tasks.length);
  tasks.forEach((_, t) => {
    const gi = member[t];
    if (gi < 0) return;
    const memberPreds = localPreds[t].filter((r) => r.kind === 'local' && member[r.task] === gi);
    for (const r of memberPreds) hasMemberSucc[r.task] = 1;
    if (memberPreds.length === 0) memberSources.set(gi, [...(memberSources.get(gi) ?? []), t]);
  });
  tasks.forEach((_, t) => {
    const gi = member[t];
    if (gi >= 0 && !hasMemberSucc[t]) memberSinks.set(gi, [...(memberSinks.get(gi) ?? []), t]);
  });
  return { present, member, localPreds, memberSources, memberSinks };
}

/**
 * Per node: its signature, computed once for each distinct (roles, tags) combination, so a
 * 10,000-node plan with four kinds of node does the per-task work four times.
 */
export function signNodes(input: PlanInput, groups: GroupLayout): Signature[] {
  const signatures = new Map<string, Signature>();
  return input.allNodes.map((node) => {
    const key = signatureKey(node);
    let sig = signatures.get(key);
    if (!sig) {
      sig = computeSignature(node, input, groups);
      signatures.set(key, sig);
    }
    return sig;
  });
}
