// The request classes are class-validator DTOs: only their types are exported here. The classes,
// CONFIG_STORE_REQUESTS and validatePayload are in @granule/contracts/dto.
export type {
  AddNodeRequest,
  AssignNodeRequest,
  CreateEnvironmentRequest,
  EmptyRequest,
  EnvironmentPluginRequest,
  GetTasksRequest,
  InstallPluginRequest,
  ListNodesRequest,
  NodeRefRequest,
  PutTasksRequest,
  RecordCredentialRequest,
  RefRequest,
  StrategyRefRequest,
  UpdateEnvironmentRequest,
  UpdateNodeRequest,
  UploadStrategyRequest,
} from '../dto/config-store.dto';
export * from './config-store.views';
export * from './config-store.api';
