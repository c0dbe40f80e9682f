// @ts-check
// FormData (XHR standard): an ordered list of (name, value) entries, each value a string or a
// File (a Blob becomes a File named "blob"). Names and strings are USVStrings (lone surrogates
// become U+FFFD). Other guest modules read a form's entries through formEntries(), never its methods.
import { ObjectCreate, ObjectDefineProperty, ReflectApply, StringToWellFormed, TypeErrorCtor, SymbolIterator, SymbolToStringTag, call, str, bareList, append } from '../intrinsics.js';
import { loaded } from '../globals.js';
import { isBlob, isFile, blobBytes, blobType, fileName, fileLastModified, makeFile } from './blob.js';

/** @typedef {[name: string, value: string | import('./blob.js').File]} Entry */

/** @param {unknown} v */
const usv = (v) => call(StringToWellFormed, str(v));

/**
 * The entry for (name, value[, filename]) as the standard makes it.
 * @param {unknown} name @param {unknown} value @param {unknown} filename @param {boolean} withName
 * @returns {Entry}
 */
const entryOf = (name, value, filename, withName) => {
  if (!isBlob(value)) {
    if (withName) throw new TypeErrorCtor('FormData: a file name can only be given with a Blob or File value');
    return [usv(name), usv(value)];
  }
  if (isFile(value) && !withName) return [usv(name), value];
  const lastModified = isFile(value) ? fileLastModified(value) : undefined;
  return [usv(name), makeFile(blobBytes(value), withName ? usv(filename) : isFile(value) ? fileName(value) : 'blob', blobType(value), lastModified)];
};

/** @type {(value: unknown) => value is FormData} */
export let isFormData;
/** @type {(form: FormData) => Entry[]} The form's entries now (a list with no prototype). */
export let formEntries;
/** @type {(entries: Entry[]) => FormData} */
export let makeFormData;

export class FormData {
  /** @type {Entry[]} */
  #list = /** @type {Entry[]} */ (/** @type {unknown} */ (bareList()));
  /** @param {unknown} [form] @param {unknown} [submitter] */
  constructor(form = undefined, submitter = undefined) {
    void submitter;
    if (form !== undefined) throw new TypeErrorCtor('FormData: there are no HTML forms here; create it empty and append() the fields');
  }
  /** @param {unknown} name @param {unknown} value @param {unknown} [filename] */
  append(name, value, filename) {
    if (arguments.length < 2) throw new TypeErrorCtor('FormData.append: give a name and a value');
    append(this.#list, entryOf(name, value, filename, arguments.length > 2));
  }
  /** @param {unknown} name @param {unknown} value @param {unknown} [filename] */
  set(name, value, filename) {
    if (arguments.length < 2) throw new TypeErrorCtor('FormData.set: give a name and a value');
    const entry = entryOf(name, value, filename, arguments.length > 2);
    const out = /** @type {Entry[]} */ (/** @type {unknown} */ (bareList()));
    let done = false;
    for (let i = 0; i < this.#list.length; i++) {
      const e = /** @type {Entry} */ (this.#list[i]);
      if (e[0] !== entry[0]) append(out, e);
      else if (!done) {
        append(out, entry);
        done = true;
      }
    }
    if (!done) append(out, entry);
    this.#list = out;
  }
  /** @param {unknown} name */
  get(name) {
    const n = usv(name);
    for (let i = 0; i < this.#list.length; i++) if (/** @type {Entry} */ (this.#list[i])[0] === n) return /** @type {Entry} */ (this.#list[i])[1];
    return null;
  }
  /** @param {unknown} name */
  getAll(name) {
    const n = usv(name);
    /** @type {Array<string | import('./blob.js').File>} */
    const out = [];
    for (let i = 0; i < this.#list.length; i++) if (/** @type {Entry} */ (this.#list[i])[0] === n) append(out, /** @type {Entry} */ (this.#list[i])[1]);
    return out;
  }
  /** @param {unknown} name */
  has(name) {
    const n = usv(name);
    for (let i = 0; i < this.#list.length; i++) if (/** @type {Entry} */ (this.#list[i])[0] === n) return true;
    return false;
  }
  /** @param {unknown} name */
  delete(name) {
    const n = usv(name);
    const out = /** @type {Entry[]} */ (/** @type {unknown} */ (bareList()));
    for (let i = 0; i < this.#list.length; i++) if (/** @type {Entry} */ (this.#list[i])[0] !== n) append(out, this.#list[i]);
    this.#list = out;
  }
  /** @param {(value: string | import('./blob.js').File, name: string, form: FormData) => void} fn @param {unknown} [thisArg] */
  forEach(fn, thisArg) {
    if (typeof fn !== 'function') throw new TypeErrorCtor('FormData.forEach: the callback must be a function');
    // Live, like the standard's iterators: entries added during the walk are visited.
    for (let i = 0; i < this.#list.length; i++) {
      const e = /** @type {Entry} */ (this.#list[i]);
      ReflectApply(fn, thisArg, [e[1], e[0], this]);
    }
  }
  *entries() {
    for (let i = 0; i < this.#list.length; i++) {
      const e = /** @type {Entry} */ (this.#list[i]);
      yield /** @type {[string, string | import('./blob.js').File]} */ ([e[0], e[1]]);
    }
  }
  *keys() {
    for (let i = 0; i < this.#list.length; i++) yield /** @type {Entry} */ (this.#list[i])[0];
  }
  *values() {
    for (let i = 0; i < this.#list.length; i++) yield /** @type {Entry} */ (this.#list[i])[1];
  }
  [SymbolIterator]() {
    return this.entries();
  }
  static {
    isFormData = (value) => value !== null && typeof value === 'object' && #list in value;
    formEntries = (form) => {
      const out = /** @type {Entry[]} */ (/** @type {unknown} */ (bareList()));
      for (let i = 0; i < form.#list.length; i++) append(out, form.#list[i]);
      return out;
    };
    makeFormData = (entries) => {
      const form = new FormData();
      form.#list = entries;
      return form;
    };
  }
}
ObjectDefineProperty(FormData.prototype, SymbolToStringTag, { value: 'FormData', configurable: true });

/**
 * A form's entries as the plain parts the host's multipart encoder takes (what ctx.fetch's
 * `multipart` crosses as): text, or a file's bytes, name and type.
 * @param {FormData} form
 */
export const formParts = (form) => {
  const entries = formEntries(form);
  const parts = bareList();
  for (let i = 0; i < entries.length; i++) {
    const [name, value] = /** @type {Entry} */ (entries[i]);
    const part = ObjectCreate(null);
    part.name = name;
    if (typeof value === 'string') part.text = value;
    else {
      part.data = blobBytes(value);
      part.filename = fileName(value);
      // A Blob's type is printable ASCII already: it cannot break the part's header line.
      part.contentType = blobType(value) || 'application/octet-stream';
    }
    append(parts, part);
  }
  return parts;
};

// Set last: a FormData exists only once this module has loaded (fetch checks this before a brand check would load it).
loaded.formData = true;
