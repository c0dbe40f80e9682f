export * from './errors.ts';
export * from './limits.ts';
export * from './hosts.ts';
export * from './function.ts';
export * from './credential.ts';
export * from './run.ts';
export * from './validation.ts';
export * from './profile.ts';
