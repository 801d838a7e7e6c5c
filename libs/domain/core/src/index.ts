export * from './errors';
export * from './decider';
export * from './redact';
