/**
 * The engine's pure model (zod schemas, types, limits, host patterns) as the renderer sees it: the
 * renderer reaches nothing in src-main except through this file and the contract.
 */
export * from '../src-main/engine/model/index.ts';
