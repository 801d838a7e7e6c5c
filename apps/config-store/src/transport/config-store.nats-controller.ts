import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { NatsRole } from '@granule/contracts';
import { Allow } from '@granule/nats-endpoints';
import { ConfigStoreApi } from './config-store.api';

/** Who may read: people (viewers too) and the services that plan and deploy. */
const READERS: NatsRole[] = ['viewer', 'operator', 'admin', 'orchestrator', 'graph-planner'];
/** Who may change the configuration: operators (as over HTTP with the API token). */
const WRITERS: NatsRole[] = ['operator', 'admin'];
/**
 * Recording agent credentials: admins only, the holders of the trust store that issues and
 * revokes them (`granule agent enroll|revoke|record`). Not on HTTP, whose token is an operator's.
 */
const ADMINS: NatsRole[] = ['admin'];
/** Node and environment updates: operators, and the orchestrator's status projection. */
const STATUS_WRITERS: NatsRole[] = ['operator', 'admin', 'orchestrator'];

/**
 * The config-store's NATS endpoints: one `@MessagePattern` per operation on
 * `<prefix>.config.<operation>`, answered by the same `ConfigStoreApi` as the HTTP routes, so
 * validation, refusals and results are the same on both; who may call each is declared with
 * `@Allow` (a viewer reads, an operator changes, an admin records agent credentials), and every
 * change is recorded with its caller.
 */
@Controller()
export class ConfigStoreNatsController {
  constructor(@Inject(ConfigStoreApi) private readonly api: ConfigStoreApi) {}

  @MessagePattern('config.ping')
  @Allow(...READERS)
  ping(@Payload() request: unknown) {
    return this.api.handle('ping', request);
  }

  @MessagePattern('config.release.list')
  @Allow(...READERS)
  releaseList(@Payload() request: unknown) {
    return this.api.handle('release.list', request);
  }

  @MessagePattern('config.release.get')
  @Allow(...READERS)
  releaseGet(@Payload() request: unknown) {
    return this.api.handle('release.get', request);
  }

  @MessagePattern('config.release.install')
  @Allow(...WRITERS)
  releaseInstall(@Payload() request: unknown) {
    return this.api.handle('release.install', request);
  }

  @MessagePattern('config.release.remove')
  @Allow(...WRITERS)
  releaseRemove(@Payload() request: unknown) {
    return this.api.handle('release.remove', request);
  }

  @MessagePattern('config.plugin.list')
  @Allow(...READERS)
  pluginList(@Payload() request: unknown) {
    return this.api.handle('plugin.list', request);
  }

  @MessagePattern('config.plugin.get')
  @Allow(...READERS)
  pluginGet(@Payload() request: unknown) {
    return this.api.handle('plugin.get', request);
  }

  @MessagePattern('config.plugin.install')
  @Allow(...WRITERS)
  pluginInstall(@Payload() request: unknown) {
    return this.api.handle('plugin.install', request);
  }

  @MessagePattern('config.plugin.remove')
  @Allow(...WRITERS)
  pluginRemove(@Payload() request: unknown) {
    return this.api.handle('plugin.remove', request);
  }

  @MessagePattern('config.env.create')
  @Allow(...WRITERS)
  envCreate(@Payload() request: unknown) {
    return this.api.handle('env.create', request);
  }

  @MessagePattern('config.env.list')
  @Allow(...READERS)
  envList(@Payload() request: unknown) {
    return this.api.handle('env.list', request);
  }

  @MessagePattern('config.env.get')
  @Allow(...READERS)
  envGet(@Payload() request: unknown) {
    return this.api.handle('env.get', request);
  }

  @MessagePattern('config.env.update')
  @Allow(...STATUS_WRITERS)
  envUpdate(@Payload() request: unknown) {
    return this.api.handle('env.update', request);
  }

  @MessagePattern('config.env.plugin.enable')
  @Allow(...WRITERS)
  envPluginEnable(@Payload() request: unknown) {
    return this.api.handle('env.plugin.enable', request);
  }

  @MessagePattern('config.env.plugin.disable')
  @Allow(...WRITERS)
  envPluginDisable(@Payload() request: unknown) {
    return this.api.handle('env.plugin.disable', request);
  }

  @MessagePattern('config.node.add')
  @Allow(...WRITERS)
  nodeAdd(@Payload() request: unknown) {
    return this.api.handle('node.add', request);
  }

  @MessagePattern('config.node.list')
  @Allow(...READERS)
  nodeList(@Payload() request: unknown) {
    return this.api.handle('node.list', request);
  }

  @MessagePattern('config.node.get')
  @Allow(...READERS)
  nodeGet(@Payload() request: unknown) {
    return this.api.handle('node.get', request);
  }

  @MessagePattern('config.node.update')
  @Allow(...STATUS_WRITERS)
  nodeUpdate(@Payload() request: unknown) {
    return this.api.handle('node.update', request);
  }

  @MessagePattern('config.node.assign')
  @Allow(...WRITERS)
  nodeAssign(@Payload() request: unknown) {
    return this.api.handle('node.assign', request);
  }

  @MessagePattern('config.node.remove')
  @Allow(...WRITERS)
  nodeRemove(@Payload() request: unknown) {
    return this.api.handle('node.remove', request);
  }

  @MessagePattern('config.tasks.get')
  @Allow(...READERS)
  tasksGet(@Payload() request: unknown) {
    return this.api.handle('tasks.get', request);
  }

  @MessagePattern('config.tasks.put')
  @Allow(...WRITERS)
  tasksPut(@Payload() request: unknown) {
    return this.api.handle('tasks.put', request);
  }

  @MessagePattern('config.strategy.upload')
  @Allow(...WRITERS)
  strategyUpload(@Payload() request: unknown) {
    return this.api.handle('strategy.upload', request);
  }

  @MessagePattern('config.strategy.list')
  @Allow(...READERS)
  strategyList(@Payload() request: unknown) {
    return this.api.handle('strategy.list', request);
  }

  @MessagePattern('config.strategy.get')
  @Allow(...READERS)
  strategyGet(@Payload() request: unknown) {
    return this.api.handle('strategy.get', request);
  }

  @MessagePattern('config.strategy.remove')
  @Allow(...WRITERS)
  strategyRemove(@Payload() request: unknown) {
    return this.api.handle('strategy.remove', request);
  }

  @MessagePattern('config.audit.list')
  @Allow(...READERS)
  auditList(@Payload() request: unknown) {
    return this.api.handle('audit.list', request);
  }

  @MessagePattern('config.credential.record')
  @Allow(...ADMINS)
  credentialRecord(@Payload() request: unknown) {
    return this.api.handle('credential.record', request);
  }
}
