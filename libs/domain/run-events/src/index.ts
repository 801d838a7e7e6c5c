export * from './run-events';
export * from './run-phase';
export * from './run.errors';
export * from './run-summary.types';
export * from './task-report';
export * from './task-log';
export * from './check-report';
export * from './resume-window';
