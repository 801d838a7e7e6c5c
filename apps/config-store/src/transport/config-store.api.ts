import { ArtifactError, MAX_ARTIFACT_BYTES } from '@granule/artifacts';
import type { ArtifactStore } from '@granule/artifacts';
import { ArtifactRetention } from '../services/artifact-retention';
import type { DataSource } from 'typeorm';
import { CONFIG_READ_OPERATIONS } from '@granule/contracts';
import type { ConfigOperation, ConfigStoreReplies, ConfigStoreRequest } from '@granule/contracts';
import { CONFIG_STORE_REQUESTS, validatePayload } from '@granule/contracts/dto';
import { SecretSealer } from '@granule/secrets';
import { AuditService } from '../audit/audit.service';
import { InvalidInputError, formatBytes } from '@granule/core';
import type { Diagnostic } from '@granule/core';
import { currentCaller } from '../audit/caller-context';
import { CatalogService, pluginFilesFromMap } from '../services/catalog.service';
import { CredentialService } from '../services/credential.service';
import type { Clock } from '../services/credential.service';
import { EnvironmentService } from '../services/environment.service';
import { NodeService } from '../services/node.service';
import { SecretSealing } from '../services/secret-sealing';
import { StrategyService } from '../services/strategy.service';
import { TaskService } from '../services/task.service';

type Handlers = { [K in ConfigOperation]: (req: ConfigStoreRequest<K>) => Promise<ConfigStoreReplies[K]> };

const READS: ReadonlySet<string> = new Set(CONFIG_READ_OPERATIONS);

/**
 * The config-store's operations, independent of the transport: NATS request/reply and HTTP
 * both call `handle`, so validation, errors and results are the same on both, and every change
 * (every operation but reads) is recorded in the audit with its caller and outcome.
 */
export class ConfigStoreApi {
  readonly catalog: CatalogService;
  readonly environments: EnvironmentService;
  readonly nodes: NodeService;
  readonly credentials: CredentialService;
  readonly tasks: TaskService;
  readonly strategies: StrategyService;
  readonly audit: AuditService;
  /** Deletes removed packages' files once no run needs them; absent without an artifacts bucket. */
  readonly retention?: ArtifactRetention;
  private readonly artifacts?: ArtifactStore;
  private readonly handlers: Handlers;

  constructor(
    dataSource: DataSource,
    subjectPrefix: string,
    options: { secretsPublicKey?: string; clock?: Clock; artifacts?: ArtifactStore } = {},
  ) {
    const { secretsPublicKey } = options;
    const sealing = new SecretSealing(secretsPublicKey ? new SecretSealer(secretsPublicKey).seal : undefined);
    this.catalog = new CatalogService(dataSource, sealing, options.artifacts);
    this.artifacts = options.artifacts;
    if (options.artifacts) this.retention = new ArtifactRetention(dataSource, options.artifacts);
    this.environments = new EnvironmentService(dataSource, sealing);
    this.credentials = new CredentialService(dataSource, options.clock);
    this.nodes = new NodeService(dataSource, this.credentials);
    this.tasks = new TaskService(dataSource, sealing);
    this.strategies = new StrategyService(dataSource);
    this.audit = new AuditService(dataSource);
    this.handlers = {
      ping: async () => ({
        service: 'config-store',
        subject_prefix: subjectPrefix,
        ...(secretsPublicKey ? { secrets_public_key: secretsPublicKey } : {}),
      }),
      'release.list': () => this.catalog.listReleases(),
      'release.get': (r) => this.catalog.getRelease(r.id),
      'release.install': (r) =>
        this.catalog.install(pluginFilesFromMap(r.files, r.source), r.source, 'release', artifactOf(r)),
      'release.remove': async (r) => this.swept(await this.catalog.removeRelease(r.id)),
      'plugin.list': () => this.catalog.listPlugins(),
      'plugin.get': (r) => this.catalog.getPlugin(r.id),
      'plugin.install': (r) =>
        this.catalog.install(pluginFilesFromMap(r.files, r.source), r.source, 'plugin', artifactOf(r)),
      'plugin.remove': async (r) => this.swept(await this.catalog.removePlugin(r.id)),
      'env.create': (r) => this.environments.create(r),
      'env.list': () => this.environments.list(),
      'env.get': (r) => this.environments.get(r.id),
      'env.update': (r) => this.environments.update(r),
      'env.plugin.enable': (r) => this.environments.enablePlugin(r),
      'env.plugin.disable': (r) => this.environments.disablePlugin(r),
      'node.add': (r) => this.nodes.add(r),
      'node.list': (r) => this.nodes.list(r),
      'node.get': (r) => this.nodes.get(r.uid),
      'node.update': (r) => this.nodes.update(r),
      'node.assign': (r) => this.nodes.assign(r),
      'node.remove': (r) => this.nodes.remove(r.uid),
      'tasks.get': (r) => this.tasks.get(r),
      'tasks.put': (r) => this.tasks.put(r),
      'strategy.upload': (r) => this.strategies.upload(r),
      'strategy.list': () => this.strategies.list(),
      'strategy.get': (r) => this.strategies.get(r.name),
      'strategy.remove': (r) => this.strategies.remove(r.name),
      'audit.list': (r) => this.audit.list(r.limit),
      'credential.record': (r) => this.credentials.record(r),
    };
  }

  /** True for a known operation name. */
  /**
   * A removal answers once its transaction committed; the removed package's files are deleted
   * now if no run needs them (else by a later sweep). A failed sweep does not fail the removal.
   */
  private async swept<T>(removed: T): Promise<T> {
    await this.retention?.sweep().catch(() => undefined);
    return removed;
  }

  /**
   * HTTP upload of deployment files (`PUT /artifacts/<digest>`), checked as they stream in. A
   * `Content-Length` over `MAX_ARTIFACT_BYTES` is refused (`ARTIFACT_TOO_LARGE`, 413) before a
   * byte is read, and a body that goes on past its `Content-Length` is stopped there.
   */
  async storeArtifact(
    digest: string,
    contentLength: string | undefined,
    body: AsyncIterable<Uint8Array>,
  ): Promise<{ digest: string; size: number }> {
    const problems: Diagnostic[] = [];
    const size = Number(contentLength);
    if (!/^[0-9a-f]{64}$/.test(digest))
      problems.push({
        severity: 'error',
        code: 'CONFIG_BAD_FIELD',
        path: 'digest',
        message: `expected a SHA-256 in 64 lowercase hex digits, got '${digest.slice(0, 80)}'`,
      });
    if (contentLength === undefined || !Number.isSafeInteger(size) || size < 0)
      problems.push({
        severity: 'error',
        code: 'CONFIG_BAD_FIELD',
        path: 'content-length',
        message: 'expected the size of the tar in a Content-Length header',
      });
    if (problems.length > 0) throw new InvalidInputError(problems);
    if (size > MAX_ARTIFACT_BYTES)
      throw new ArtifactError(
        'ARTIFACT_TOO_LARGE',
        `the deployment files are too large: expected at most ${formatBytes(MAX_ARTIFACT_BYTES)} (the package size limit), got ${formatBytes(size)} in Content-Length`,
      );
    if (!this.artifacts)
      throw new ArtifactError(
        'ARTIFACT_NOT_STORED',
        'this config-store keeps no deployment files (it has no artifacts bucket)',
      );
    const present = await this.artifacts.info(digest);
    if (present?.size !== size) await this.artifacts.putStream({ digest, size }, body);
    const caller = currentCaller();
    await this.audit.record(caller, 'artifact.store', { digest, size }, 'ok').catch(() => undefined);
    return { digest, size };
  }

  isOperation(name: string): name is ConfigOperation {
    return Object.prototype.hasOwnProperty.call(CONFIG_STORE_REQUESTS, name);
  }

  /** Validates the payload against the operation's class and runs it. Throws `GranuleError`s for refusals. */
  async handle<K extends ConfigOperation>(operation: K, payload: unknown): Promise<ConfigStoreReplies[K]> {
    const run = async (): Promise<ConfigStoreReplies[K]> => {
      const request = validatePayload(CONFIG_STORE_REQUESTS[operation] as new () => ConfigStoreRequest<K>, payload);
      return (this.handlers[operation] as (req: ConfigStoreRequest<K>) => Promise<ConfigStoreReplies[K]>)(request);
    };
    if (READS.has(operation)) return run();
    const caller = currentCaller();
    let result: ConfigStoreReplies[K];
    try {
      result = await run();
    } catch (err) {
      await this.audit.record(caller, operation, payload, err).catch(() => undefined);
      throw err;
    }
    await this.audit.record(caller, operation, payload, 'ok');
    return result;
  }
}

/** HTTP status of an error code: bad input 400, unknown 404, conflicts 409, internal 500. */
/** The stored deployment files an install request names, if any. */
function artifactOf(r: {
  artifact_digest?: string;
  artifact_size?: number;
}): { digest: string; size?: number } | undefined {
  if (r.artifact_digest === undefined) return undefined;
  return r.artifact_size === undefined
    ? { digest: r.artifact_digest }
    : { digest: r.artifact_digest, size: r.artifact_size };
}

export function httpStatusFor(code: string): number {
  switch (code) {
    case 'ARTIFACT_NOT_FOUND':
    case 'ARTIFACT_DAMAGED':
    case 'INVALID_INPUT':
    case 'PLAN_CYCLE':
    case 'USAGE':
      return 400;
    case 'UNAUTHORIZED':
      return 401;
    case 'CONFIG_NOT_FOUND':
    case 'RUN_UNKNOWN':
      return 404;
    case 'CONFIG_ALREADY_EXISTS':
    case 'CONFIG_IN_USE':
    case 'CONFIG_NO_RELEASE':
    case 'CONFIG_AMBIGUOUS':
    case 'CONFIG_INCOMPATIBLE':
    case 'CONFIG_WRONG_KIND':
    case 'ARTIFACT_IN_USE':
      return 409;
    case 'ARTIFACT_UNREADABLE':
    case 'ARTIFACT_NOT_STORED':
    case 'ORCHESTRATOR_UNAVAILABLE':
      return 503;
    case 'ORCHESTRATOR_TIMEOUT':
      return 504;
    // An orchestrator refused config-store's own NATS identity (a run query it forwards): the
    // service is misconfigured, not the caller unauthorized.
    case 'FORBIDDEN':
      return 502;
    case 'ARTIFACT_TOO_LARGE':
      return 413;
    case 'TOO_MANY_STREAMS':
      return 429;
    case 'INTERNAL':
      return 500;
    default:
      return code.startsWith('PLAN_') || code.startsWith('PLUGIN_') ? 400 : 500;
  }
}
