import { isOwnRendererUrl } from './windowPolicy.ts';

/**
 * Whether an IPC message comes from our own window's main frame showing our own renderer:
 * not an iframe, not another window, not a page that navigated elsewhere.
 */
export function isTrustedSender(sender: { frameUrl: string | undefined; isMainFrame: boolean; windowId: number | undefined }, expected: { rendererUrl: string; windowId: number | undefined }): boolean {
  if (!sender.isMainFrame || sender.frameUrl === undefined || sender.windowId === undefined) return false;
  if (sender.windowId !== expected.windowId) return false;
  return isOwnRendererUrl(sender.frameUrl, expected.rendererUrl);
}
