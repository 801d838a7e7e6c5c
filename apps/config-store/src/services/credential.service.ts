import type { DataSource } from 'typeorm';
import { ConfigStoreError } from '@granule/config-model';
import type { NodeCredentialView, RecordCredentialRequest, RecordedCredentialView } from '@granule/contracts';
import { NodeCredentialEntity } from '../persistence/config-store.entities';
import { credentialStateAt, nodeCredentialAt } from './node-credential';

/** The clock a credential's state is read against (tests give their own). */
export type Clock = () => Date;

/**
 * Node agents' NATS credentials as the admin who holds the trust store records them, and the
 * state each node's shows (`NodeView.credential`). The trust store stays the authority: NATS
 * refuses a revoked or expired key whatever is recorded here; this is what people can read.
 */
export class CredentialService {
  constructor(
    private readonly ds: DataSource,
    private readonly clock: Clock = () => new Date(),
  ) {}

  /**
   * Records a credential, or records again one already known (same key): its times are the
   * trust store's, and a revocation once recorded stays (the earliest one), since NATS never
   * takes a revoked key back. A key recorded for another node is refused.
   */
  async record(req: RecordCredentialRequest): Promise<RecordedCredentialView> {
    const issuedAt = new Date(req.issued_at);
    const expiresAt = req.expires_at ? new Date(req.expires_at) : null;
    const revokedAt = req.revoked_at ? new Date(req.revoked_at) : null;
    const saved = await this.ds.transaction(async (em) => {
      const repo = em.getRepository(NodeCredentialEntity);
      // Inserted unless known, then locked: two admins recording the same key at once (an enroll
      // and a revoke) both end on one row, and the revocation is kept.
      await repo
        .createQueryBuilder()
        .insert()
        .values({ publicKey: req.public_key, uid: req.uid, identity: req.identity, issuedAt, expiresAt, revokedAt })
        .orIgnore()
        .execute();
      const row = await repo.findOneOrFail({
        where: { publicKey: req.public_key },
        lock: { mode: 'pessimistic_write' },
      });
      if (row.uid !== req.uid)
        throw new ConfigStoreError(
          'CONFIG_IN_USE',
          `credential ${req.public_key} is recorded for node '${row.uid}', not '${req.uid}'`,
        );
      row.identity = req.identity;
      row.issuedAt = issuedAt;
      row.expiresAt = expiresAt;
      if (revokedAt && (!row.revokedAt || revokedAt.getTime() < row.revokedAt.getTime())) row.revokedAt = revokedAt;
      return repo.save(row);
    });
    return {
      uid: saved.uid,
      identity: saved.identity,
      public_key: saved.publicKey,
      issued_at: saved.issuedAt.toISOString(),
      expires_at: saved.expiresAt?.toISOString() ?? null,
      revoked_at: saved.revokedAt?.toISOString() ?? null,
      state: credentialStateAt(saved, this.clock()),
    };
  }

  /** The credential of each of `uids` (null for a node with none recorded), read now. */
  async ofNodes(uids: readonly string[]): Promise<Map<string, NodeCredentialView | null>> {
    const rows =
      uids.length === 0
        ? []
        : uids.length === 1
          ? await this.ds.getRepository(NodeCredentialEntity).findBy({ uid: uids[0] })
          : await this.ds
              .getRepository(NodeCredentialEntity)
              .createQueryBuilder('c')
              .where('c.uid = ANY(:uids)', { uids: [...uids] })
              .getMany();
    const byNode = new Map<string, NodeCredentialEntity[]>();
    for (const r of rows) {
      const list = byNode.get(r.uid);
      if (list) list.push(r);
      else byNode.set(r.uid, [r]);
    }
    const now = this.clock();
    return new Map(uids.map((uid) => [uid, nodeCredentialAt(byNode.get(uid) ?? [], now)]));
  }
}
