import { ARTIFACT_SWEEP_INTERVAL_MS } from './services/artifact-retention';
import { ArtifactStore, ensureArtifactsBucket } from '@granule/artifacts';
import type { INestApplication, INestMicroservice } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger as NestLogger } from 'nestjs-pino';
import type { NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { GranuleError, INPUT_LIMITS } from '@granule/core';
import { CONFIG_STORE_QUEUE } from '@granule/contracts';
import { connectNats } from '@granule/messaging';
import { GranuleNatsServer } from '@granule/nats-endpoints';
import { outcomeOfCode, type RequestMetrics } from '@granule/observability';
import { openPluginSource } from '@granule/plugin-files';
import { ConfigStoreModule } from './app.module';
import type { ConfigStoreConfig } from './config/config.service';
import { jsonBodyMiddleware } from './http/json-body.middleware';
import { serveOpenApi } from './http/openapi';
import { RunsGateway } from './runs/runs-gateway';
import { requestMetricsMiddleware } from './http/request-metrics.middleware';
import { StreamSlots } from './http/stream-slots';
import { openConfigDatabase } from './persistence/database';
import { ConfigStoreApi } from './transport/config-store.api';
import type { Logger } from '@granule/service-kit';

/** Where the server reports internal errors (the app's logger). */
export type ErrorLog = (message: string, err: unknown) => void;

/** The running service: database, migrations, basic release, NATS endpoints, and HTTP when a token is set. */
export interface ConfigStoreRuntime {
  dataSource: DataSource;
  nc: NatsConnection;
  api: ConfigStoreApi;
  /** Start-up facts for the log (migrations run, basic release). */
  notes: string[];
  /** Listens for HTTP (only when the config has an API token). */
  listenHttp(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the config-store from validated config. Throws service-kit's database errors and
 * messaging's NATS errors with one-line messages; cleans up what it opened on failure.
 */
export async function startConfigStore(
  config: Readonly<ConfigStoreConfig>,
  logError: ErrorLog,
  options: {
    /** The service's logger (Nest's lines and HTTP requests go through it); false: no Nest log. */
    logger?: Logger | false;
    /** Counts every HTTP and NATS request by route and outcome (`granule_requests_total`). */
    metrics?: Pick<RequestMetrics, 'answered'>;
    /** Called when NATS closes the connection for good (a credential refused at a reconnection). */
    onNatsLost?: (message: string) => void;
  } = {},
): Promise<ConfigStoreRuntime> {
  const notes: string[] = [];
  const dataSource = await openConfigDatabase(config.databaseUrl, {
    create: config.createDatabase,
    runMigrations: config.runMigrations,
    onMigrated: (ran) => notes.push(ran.length > 0 ? `migrations: ran ${ran.join(', ')}` : 'migrations: up to date'),
  });
  let nc: NatsConnection | undefined;
  let app: INestApplication | INestMicroservice | undefined;
  try {
    nc = await connectNats(config, 'config-store', options.onNatsLost ? { onLost: options.onNatsLost } : {});
    // config-store keeps the deployment files of what it installs (ADR 0026).
    await ensureArtifactsBucket(nc, config.subjectPrefix);
    const api = new ConfigStoreApi(dataSource, config.subjectPrefix, {
      secretsPublicKey: config.secretsPublicKey,
      artifacts: new ArtifactStore(nc, config.subjectPrefix),
    });
    if (config.preinstalledRelease) {
      const source = config.preinstalledRelease;
      notes.push(await api.catalog.preinstallRelease(() => openPluginSource(source), source));
    }
    const strategy = new GranuleNatsServer({
      connection: nc,
      prefix: config.subjectPrefix,
      queue: CONFIG_STORE_QUEUE,
      onInternalError: (pattern, err) => logError(`${pattern} failed`, err),
      onAnswered: (pattern, code, seconds) => options.metrics?.answered('nats', pattern, outcomeOfCode(code), seconds),
    });
    const logger = options.logger ?? false;
    const httpOn = config.apiTokens.length > 0;
    const runs = httpOn
      ? {
          gateway: new RunsGateway(nc, config.subjectPrefix),
          streams: new StreamSlots({ total: config.httpMaxStreams, perCaller: config.httpMaxStreamsPerCaller }),
        }
      : undefined;
    const module = ConfigStoreModule.register(api, config.apiTokens, logger || undefined, runs);
    // Nest logs through nestjs-pino once the app is built; until then a failure is the caller's one line.
    const logging = { logger: false as const };
    let http: NestExpressApplication | undefined;
    if (httpOn) {
      // Bodies are read by jsonBodyMiddleware: bounded, depth-checked, refusals in the API's format.
      http = await NestFactory.create<NestExpressApplication>(module, {
        ...logging,
        abortOnError: false,
        bodyParser: false,
      });
      if (logger) http.useLogger(http.get(NestLogger));
      if (options.metrics) http.use(requestMetricsMiddleware(options.metrics));
      http.use(jsonBodyMiddleware(INPUT_LIMITS.httpBodyBytes));
      serveOpenApi(http);
      http.connectMicroservice({ strategy }, { inheritAppConfig: true });
      await http.startAllMicroservices();
      app = http;
    } else {
      const microservice = await NestFactory.createMicroservice(module, { strategy, ...logging, abortOnError: false });
      if (logger) microservice.useLogger(microservice.get(NestLogger));
      await microservice.listen();
      app = microservice;
    }
    await nc.flush();
    // Removed packages whose runs have ended since are deleted from the bucket (ADR 0026).
    const retention = api.retention;
    const sweeper = retention
      ? setInterval(() => {
          retention.sweep().catch((err: unknown) => logError('deleting removed packages failed', err));
        }, ARTIFACT_SWEEP_INTERVAL_MS)
      : undefined;
    sweeper?.unref();
    const conn = nc;
    const nest = app;
    return {
      dataSource,
      nc: conn,
      api,
      notes,
      async listenHttp() {
        if (!http) return;
        try {
          await http.listen(config.httpPort, config.httpHost);
        } catch (err) {
          throw new GranuleError(
            'HTTP_UNAVAILABLE',
            `cannot listen on ${config.httpHost}:${config.httpPort}: ${(err as Error).message} — set GRANULE_HTTP_PORT`,
          );
        }
      },
      async stop() {
        clearInterval(sweeper);
        await nest.close();
        await conn.drain();
        await dataSource.destroy();
      },
    };
  } catch (err) {
    await app?.close().catch(() => undefined);
    await nc?.close().catch(() => undefined);
    await dataSource.destroy().catch(() => undefined);
    throw err;
  }
}
