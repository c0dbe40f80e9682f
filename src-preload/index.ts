// The only place the renderer's world meets ipcRenderer. Sandboxed preloads are bundled CommonJS.
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
import { buildStudio } from './bridge.ts';
import type { Envelope } from './contract.ts';

const studio = buildStudio(
  (channel, payload) => ipcRenderer.invoke(channel, payload) as Promise<Envelope<unknown>>,
  (channel, listener) => {
    const handler = (_event: IpcRendererEvent, payload: unknown): void => listener(payload);
    ipcRenderer.on(channel, handler);
    return () => ipcRenderer.off(channel, handler);
  },
);

contextBridge.exposeInMainWorld('studio', studio);
