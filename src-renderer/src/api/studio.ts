// The only module that touches window.studio.
import type { StudioApi } from '../../../src-preload/contract.ts';

declare global {
  interface Window {
    studio: StudioApi;
  }
}

export const studio: StudioApi = window.studio;

export interface UiError {
  code: string;
  message: string;
  details?: Record<string, unknown> | undefined;
}

/** The `{ code, message }` of anything a bridge call rejected with. */
export function asUiError(error: unknown): UiError {
  if (error && typeof error === 'object' && 'message' in error) {
    const e = error as { code?: unknown; message: unknown; details?: unknown };
    return { code: typeof e.code === 'string' ? e.code : 'internal', message: String(e.message), details: (e.details as Record<string, unknown> | undefined) ?? undefined };
  }
  return { code: 'internal', message: String(error) };
}
