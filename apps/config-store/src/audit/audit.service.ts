import type { DataSource, Repository } from 'typeorm';
import { GranuleError } from '@granule/core';
import type { AuditEntryView } from '@granule/contracts';
import { ConfigAuditEntity } from '../persistence/config-store.entities';
import type { RequestCaller } from './caller-context';

/** The request fields that name what a change is about, in the order they are looked for. */
const TARGET_FIELDS = ['uid', 'id', 'name', 'plugin', 'environment', 'scope'] as const;

function targetOf(request: unknown): string | null {
  if (typeof request !== 'object' || request === null) return null;
  const r = request as Record<string, unknown>;
  for (const field of TARGET_FIELDS)
    if (typeof r[field] === 'string' || typeof r[field] === 'number') return String(r[field]).slice(0, 200);
  return null;
}

/** The audit of configuration changes: who asked for which change, over which transport, and how it ended. */
export class AuditService {
  private readonly rows: Repository<ConfigAuditEntity>;

  constructor(dataSource: DataSource) {
    this.rows = dataSource.getRepository(ConfigAuditEntity);
  }

  async record(caller: RequestCaller, operation: string, request: unknown, outcome: unknown): Promise<void> {
    await this.rows.insert({
      caller: caller.name,
      role: caller.role ?? null,
      transport: caller.transport,
      operation,
      target: targetOf(request),
      outcome: outcome === 'ok' ? 'ok' : outcome instanceof GranuleError ? outcome.code : 'INTERNAL',
    });
  }

  async list(limit = 100): Promise<AuditEntryView[]> {
    const rows = await this.rows.find({ order: { id: 'DESC' }, take: limit });
    return rows.map((r) => ({
      at: r.at.toISOString(),
      caller: r.caller,
      role: r.role,
      transport: r.transport,
      operation: r.operation,
      target: r.target,
      outcome: r.outcome,
    }));
  }
}
