export {
  addConnectionOptions,
  cliConfigPath,
  readCliConfigFile,
  resolveConnection,
  withConfigStore,
} from './cli-connection';
export type { CliConfigFile, ConnectionSettings } from './cli-connection';
export { printResult } from './print-result';
