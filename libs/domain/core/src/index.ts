export * from './errors';
export * from './decider';
export * from './redact';
export * from './identifiers';
export * from './input-limits';
export * from './text-input';
export * from './untrusted-data';
export * from './json-text';
