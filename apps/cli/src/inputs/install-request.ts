import type { NatsConnection } from '@nats-io/transport-node';
import type { ConfigStoreClient, PluginSourceFiles } from '@granule/config-store-client';
import type { InstallPluginRequest } from '@granule/contracts/dto';
import { CliSecrets } from './seal-inputs';

/**
 * The install request for a plugin or release folder or `.tar.gz`: its configuration and task
 * files (secrets sealed), and the digest of its deployment files, which are packed and stored in
 * the artifacts bucket first (streamed from disk; the same files are stored once).
 */
export async function installRequest(
  read: PluginSourceFiles,
  client: ConfigStoreClient,
  nc: NatsConnection,
): Promise<InstallPluginRequest> {
  const { source } = read;
  const body = await new CliSecrets(client).pluginFiles(read);
  // tar and the object store client are loaded only for an install.
  const { ArtifactStore, storePluginArtifact } = await import('@granule/artifacts');
  const artifact = await storePluginArtifact(new ArtifactStore(nc, client.prefix), source);
  return artifact ? { ...body, artifact_digest: artifact.digest, artifact_size: artifact.size } : body;
}
