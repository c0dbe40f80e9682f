// @ts-check
// ctx.content: what a function returns for MCP content other than JSON (branded, frozen items).
import { ObjectCreate, ObjectFreeze, TypeErrorCtor, WeakMapCtor, WeakMapSet, WeakMapHas, call, str } from './intrinsics.js';
import { bytesToBase64 } from './base64.js';

/** Made with the first content item (a plain call makes none). @type {WeakMap<object, true> | undefined} */
let contentBrand;
/** @param {unknown} data @param {string} what */
const dataOf = (data, what) => (typeof data === 'string' ? data : bytesToBase64(/** @type {typeof import('./encoding.js')} */ (require('./encoding.js')).toBytes(data, what)));
/** @template {object} T @param {T} item @returns {Readonly<T>} */
const brand = (item) => {
  const frozen = ObjectFreeze(item);
  call(WeakMapSet, (contentBrand ??= new WeakMapCtor()), frozen, true);
  return frozen;
};
export const content = ObjectCreate(null);
content.text = /** @param {unknown} text */ (text) => brand({ type: 'text', text: str(text) });
content.image = /** @param {unknown} data @param {unknown} mimeType */ (data, mimeType) => brand({ type: 'image', data: dataOf(data, 'ctx.content.image'), mimeType: str(mimeType) });
content.audio = /** @param {unknown} data @param {unknown} mimeType */ (data, mimeType) => brand({ type: 'audio', data: dataOf(data, 'ctx.content.audio'), mimeType: str(mimeType) });
content.resource = /** @param {any} resource */ (resource) => {
  if (!resource || typeof resource !== 'object') throw new TypeErrorCtor('ctx.content.resource: expected { uri, mimeType?, text? | blob? }');
  /** @type {{ uri: string, mimeType?: string, text?: string, blob?: string }} */
  const r = { uri: str(resource.uri) };
  if (resource.mimeType !== undefined) r.mimeType = str(resource.mimeType);
  if (resource.text !== undefined) r.text = str(resource.text);
  else if (resource.blob !== undefined) r.blob = dataOf(resource.blob, 'ctx.content.resource');
  else throw new TypeErrorCtor('ctx.content.resource: give text or blob');
  return brand({ type: 'resource', resource: ObjectFreeze(r) });
};
ObjectFreeze(content);

/** Whether `value` is an item one of the helpers above made (a brand the function cannot forge). @param {unknown} value */
export const isContent = (value) => value !== null && typeof value === 'object' && contentBrand !== undefined && call(WeakMapHas, contentBrand, value);
