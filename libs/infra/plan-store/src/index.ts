export * from './plan-store-schema.migration';
export * from './plan-store.errors';
export * from './plan-encoding';
export * from './plan-store';
export * from './planner-client';
