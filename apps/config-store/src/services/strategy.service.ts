import type { DataSource } from 'typeorm';
import { IDENTIFIER_RULES, InvalidInputError, identifierProblem, isIdentifier } from '@granule/core';
import { ConfigStoreError, notFound } from '@granule/config-model';
import type { StrategyView, UploadStrategyRequest } from '@granule/contracts';
import { parseStrategyDocument } from '@granule/deployment-strategy';
import { StrategyEntity } from '../persistence/config-store.entities';
import { mapDatabaseError } from './lookups';
import { strategyView } from './views';

/** Deployment strategies (seed 004): upload (validated), list, show, remove. */
export class StrategyService {
  constructor(private readonly ds: DataSource) {}

  async upload(req: UploadStrategyRequest): Promise<StrategyView> {
    const file = req.file ?? req.name ?? 'strategy';
    const parsed = parseStrategyDocument(req.document, file);
    if (!parsed.strategy || parsed.diagnostics.some((d) => d.severity === 'error'))
      throw new InvalidInputError(parsed.diagnostics);
    const name = req.name ?? parsed.strategy.name;
    if (name === undefined || !isIdentifier('strategyName', name)) {
      const problem =
        name === undefined
          ? `expected a ${IDENTIFIER_RULES.strategyName.what} of ${IDENTIFIER_RULES.strategyName.rule}, got none (the document has no metadata.name)`
          : `metadata.name: ${identifierProblem('strategyName', name)}`;
      throw new InvalidInputError([
        {
          severity: 'error',
          code: 'CONFIG_BAD_FIELD',
          path: 'name',
          message: `${problem}; give one with --name`,
          file,
        },
      ]);
    }
    try {
      return await this.ds.transaction(async (em) => {
        const repo = em.getRepository(StrategyEntity);
        const existing = await repo.findOneBy({ name });
        if (existing && !req.replace) {
          throw new ConfigStoreError(
            'CONFIG_ALREADY_EXISTS',
            `strategy '${name}' already exists; upload with --replace to replace it`,
          );
        }
        const entity = existing ?? repo.create({ name });
        entity.document = req.document;
        entity.groups = parsed.strategy?.groups.map((g) => g.name) ?? [];
        return strategyView(await repo.save(entity));
      });
    } catch (err) {
      throw mapDatabaseError(err, `strategy '${name}'`);
    }
  }

  async list(): Promise<StrategyView[]> {
    return (await this.ds.getRepository(StrategyEntity).find({ order: { name: 'ASC' } })).map(strategyView);
  }

  async get(name: string): Promise<StrategyView> {
    return strategyView(await this.find(name));
  }

  async remove(name: string): Promise<StrategyView> {
    return this.ds.transaction(async (em) => {
      const s = await this.find(name);
      await em.getRepository(StrategyEntity).delete({ name });
      return strategyView(s);
    });
  }

  private async find(name: string): Promise<StrategyEntity> {
    const s = await this.ds.getRepository(StrategyEntity).findOneBy({ name });
    if (!s)
      throw notFound(
        'strategy',
        name,
        (await this.ds.getRepository(StrategyEntity).find({ order: { name: 'ASC' } })).map((x) => x.name),
      );
    return s;
  }
}
