import path from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { ArtifactCache, ArtifactError, ArtifactStore, type HeldArtifact } from '@granule/artifacts';
import { PACKAGE_PARAMETER, anchorParameters, packageOf } from '@granule/plugin';
import type { TaskExecution, TaskOutcome } from '@granule/task-runners';
import { AGENT_LOGGER, type AgentLogger } from './agent-logger';
import type { ArtifactFetchCounter } from '@granule/observability';
import { AGENT_METRICS, NATS_CONNECTION } from './agent.tokens';
import { AGENT_CONFIG } from './config/agent-config.provider';
import type { AgentConfig } from './config/agent-config';

/** Where the agent keeps its copies of packages: `<stateDir>/artifacts/<digest>/`. */
export const ARTIFACTS_DIR_NAME = 'artifacts';

/** The code of a task failed because its package could not be had. */
export type PackageProblemCode =
  'ARTIFACT_NOT_FOUND' | 'ARTIFACT_DAMAGED' | 'ARTIFACT_UNREADABLE' | 'AGENT_INVALID_DISPATCH';

/**
 * Gives a task the files of the package it names (`$package`: plugin name, version, digest):
 * fetched once from the artifacts bucket into the agent's cache, checked against the digest,
 * and the task's relative manifest, modules, script folder and sources anchored in that copy.
 * A package that cannot be fetched or checked fails the task before anything runs (ADR 0026).
 */
@Injectable()
export class PackageFiles {
  private readonly cache: ArtifactCache;

  constructor(
    @Inject(NATS_CONNECTION) nats: NatsConnection,
    @Inject(AGENT_CONFIG) config: AgentConfig,
    @Inject(AGENT_LOGGER) log: AgentLogger,
    @Inject(AGENT_METRICS) private readonly metrics: ArtifactFetchCounter,
  ) {
    this.cache = new ArtifactCache(
      path.join(config.stateDir, ARTIFACTS_DIR_NAME),
      new ArtifactStore(nats, config.subjectPrefix),
      {
        fetched: (ref, d) =>
          log.info(
            { package: ref.name, version: ref.version, digest: ref.digest, bytes: d.bytes, ms: d.ms },
            'package fetched',
          ),
        discarded: (ref, reason) =>
          log.warn({ package: ref.name, version: ref.version, digest: ref.digest, reason }, 'package copy discarded'),
        evicted: (e) =>
          log.info(
            { package: e.name, version: e.version, digest: e.digest, bytes: e.bytes },
            'package copy removed (least recently used, over GRANULE_ARTIFACT_CACHE_MB)',
          ),
      },
      { maxBytes: config.artifactCacheBytes },
    );
  }

  /** Packages fetched since the agent started. */
  get fetches(): number {
    return this.cache.fetches;
  }

  /**
   * The execution with its package's paths anchored (and `$package` removed), or the failed
   * outcome to report when the package cannot be had (a noop or check dispatch too). The
   * package's copy is held (never evicted) until `release()`, called when the task has ended.
   */
  async prepare(
    exec: TaskExecution,
  ): Promise<{ execution: TaskExecution; release: () => void } | { outcome: TaskOutcome }> {
    const ref = packageOf(exec.parameters);
    if (ref === undefined) return { execution: exec, release: () => undefined };
    const { [PACKAGE_PARAMETER]: _named, ...parameters } = exec.parameters;
    if (typeof ref === 'string') return { outcome: failed('AGENT_INVALID_DISPATCH', `invalid dispatch: ${ref}`, 0) };
    // A noop or check run needs the files too: puppet --noop reads the manifests, rsync
    // --dry-run the source, file tasks compare with them. Fetching writes only the agent's cache.
    const started = performance.now();
    let held: HeldArtifact;
    const fetchesBefore = this.cache.fetches;
    try {
      held = await this.cache.hold(ref);
      this.metrics.artifactFetched(this.cache.fetches > fetchesBefore ? 'fetched' : 'cached');
    } catch (err) {
      this.metrics.artifactFetched('failed');
      const code =
        err instanceof ArtifactError &&
        err.code !== 'ARTIFACT_NOT_STORED' &&
        err.code !== 'ARTIFACT_IN_USE' &&
        err.code !== 'ARTIFACT_TOO_LARGE'
          ? err.code
          : 'ARTIFACT_UNREADABLE';
      return {
        outcome: failed(
          code,
          `the files of package ${ref.name} ${ref.version} (${ref.digest.slice(0, 12)}…) could not be had, so the task did not run: ${(err as Error).message}`,
          performance.now() - started,
        ),
      };
    }
    return {
      execution: { ...exec, parameters: anchorParameters(exec.type, parameters, held.dir) },
      release: held.release,
    };
  }
}

function failed(code: PackageProblemCode, error: string, ms: number): TaskOutcome {
  return {
    status: 'failed',
    exitCode: null,
    durationMs: Math.round(ms),
    outputTail: '',
    attempts: 0,
    error,
    errorCode: code,
  };
}
