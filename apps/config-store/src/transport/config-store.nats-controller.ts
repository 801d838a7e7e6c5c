import { Controller, Inject } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { ConfigStoreApi } from './config-store.api';

/**
 * The config-store's NATS endpoints: one `@MessagePattern` per operation on
 * `<prefix>.config.<operation>`, answered by the same `ConfigStoreApi` as the HTTP routes, so
 * validation, refusals and results are the same on both (the transport wraps them in the one
 * reply envelope).
 */
@Controller()
export class ConfigStoreNatsController {
  constructor(@Inject(ConfigStoreApi) private readonly api: ConfigStoreApi) {}

  @MessagePattern('config.ping')
  ping(@Payload() request: unknown) {
    return this.api.handle('ping', request);
  }

  @MessagePattern('config.release.list')
  releaseList(@Payload() request: unknown) {
    return this.api.handle('release.list', request);
  }

  @MessagePattern('config.release.get')
  releaseGet(@Payload() request: unknown) {
    return this.api.handle('release.get', request);
  }

  @MessagePattern('config.release.install')
  releaseInstall(@Payload() request: unknown) {
    return this.api.handle('release.install', request);
  }

  @MessagePattern('config.release.remove')
  releaseRemove(@Payload() request: unknown) {
    return this.api.handle('release.remove', request);
  }

  @MessagePattern('config.plugin.list')
  pluginList(@Payload() request: unknown) {
    return this.api.handle('plugin.list', request);
  }

  @MessagePattern('config.plugin.get')
  pluginGet(@Payload() request: unknown) {
    return this.api.handle('plugin.get', request);
  }

  @MessagePattern('config.plugin.install')
  pluginInstall(@Payload() request: unknown) {
    return this.api.handle('plugin.install', request);
  }

  @MessagePattern('config.plugin.remove')
  pluginRemove(@Payload() request: unknown) {
    return this.api.handle('plugin.remove', request);
  }

  @MessagePattern('config.env.create')
  envCreate(@Payload() request: unknown) {
    return this.api.handle('env.create', request);
  }

  @MessagePattern('config.env.list')
  envList(@Payload() request: unknown) {
    return this.api.handle('env.list', request);
  }

  @MessagePattern('config.env.get')
  envGet(@Payload() request: unknown) {
    return this.api.handle('env.get', request);
  }

  @MessagePattern('config.env.update')
  envUpdate(@Payload() request: unknown) {
    return this.api.handle('env.update', request);
  }

  @MessagePattern('config.env.plugin.enable')
  envPluginEnable(@Payload() request: unknown) {
    return this.api.handle('env.plugin.enable', request);
  }

  @MessagePattern('config.env.plugin.disable')
  envPluginDisable(@Payload() request: unknown) {
    return this.api.handle('env.plugin.disable', request);
  }

  @MessagePattern('config.node.add')
  nodeAdd(@Payload() request: unknown) {
    return this.api.handle('node.add', request);
  }

  @MessagePattern('config.node.list')
  nodeList(@Payload() request: unknown) {
    return this.api.handle('node.list', request);
  }

  @MessagePattern('config.node.get')
  nodeGet(@Payload() request: unknown) {
    return this.api.handle('node.get', request);
  }

  @MessagePattern('config.node.update')
  nodeUpdate(@Payload() request: unknown) {
    return this.api.handle('node.update', request);
  }

  @MessagePattern('config.node.assign')
  nodeAssign(@Payload() request: unknown) {
    return this.api.handle('node.assign', request);
  }

  @MessagePattern('config.node.remove')
  nodeRemove(@Payload() request: unknown) {
    return this.api.handle('node.remove', request);
  }

  @MessagePattern('config.tasks.get')
  tasksGet(@Payload() request: unknown) {
    return this.api.handle('tasks.get', request);
  }

  @MessagePattern('config.tasks.put')
  tasksPut(@Payload() request: unknown) {
    return this.api.handle('tasks.put', request);
  }

  @MessagePattern('config.strategy.upload')
  strategyUpload(@Payload() request: unknown) {
    return this.api.handle('strategy.upload', request);
  }

  @MessagePattern('config.strategy.list')
  strategyList(@Payload() request: unknown) {
    return this.api.handle('strategy.list', request);
  }

  @MessagePattern('config.strategy.get')
  strategyGet(@Payload() request: unknown) {
    return this.api.handle('strategy.get', request);
  }

  @MessagePattern('config.strategy.remove')
  strategyRemove(@Payload() request: unknown) {
    return this.api.handle('strategy.remove', request);
  }
}
