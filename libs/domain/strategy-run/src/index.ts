export * from './strategy-run.decider';
