import { EVENT_NAMES, METHOD_NAMES, type BridgeFailure, type Envelope, type EventName, type StudioApi } from './contract.ts';

export type Invoke = (channel: string, payload: unknown) => Promise<Envelope<unknown>>;
export type Subscribe = (channel: string, listener: (payload: unknown) => void) => () => void;

/**
 * Builds `window.studio` from the contract: one named function per method, grouped by noun, and
 * `on` for events. No generic invoke is exposed. Shared by the preload (ipcRenderer) and the
 * end-to-end tests (a page bound to the real engine).
 */
export function buildStudio(invoke: Invoke, subscribe: Subscribe): StudioApi {
  const api: Record<string, Record<string, (request: unknown) => Promise<unknown>>> = {};
  for (const channel of METHOD_NAMES) {
    const [noun, verb] = channel.split(':') as [string, string];
    api[noun] ??= {};
    api[noun][verb] = async (request: unknown) => {
      const envelope = await invoke(channel, request ?? {});
      if (envelope.ok) return envelope.value;
      const failure: BridgeFailure = { code: envelope.error.code, message: envelope.error.message, ...(envelope.error.details ? { details: envelope.error.details } : {}) };
      throw failure;
    };
  }
  const on = (event: EventName, listener: (payload: unknown) => void): (() => void) => {
    if (!EVENT_NAMES.includes(event)) throw new Error(`unknown event ${String(event)}`);
    return subscribe(event, listener);
  };
  return Object.freeze({ ...Object.fromEntries(Object.entries(api).map(([k, v]) => [k, Object.freeze(v)])), on }) as unknown as StudioApi;
}
