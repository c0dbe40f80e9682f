// @ts-check
// The globals Event, CustomEvent, EventTarget, AbortController and AbortSignal, defined in every
// context; their classes (events.js) are made on first use.
import { defineLazyAccessor, lazyGlobal } from '../globals.js';

/** @returns {ReturnType<typeof import('./events.js').events>} */
const events = () => /** @type {typeof import('./events.js')} */ (require('./events.js')).events();

export function install() {
  defineLazyAccessor('Event', (...v) => lazyGlobal('Event', v, () => events().Event));
  defineLazyAccessor('CustomEvent', (...v) => lazyGlobal('CustomEvent', v, () => events().CustomEvent));
  defineLazyAccessor('EventTarget', (...v) => lazyGlobal('EventTarget', v, () => events().EventTarget));
  defineLazyAccessor('AbortController', (...v) => lazyGlobal('AbortController', v, () => events().AbortController));
  defineLazyAccessor('AbortSignal', (...v) => lazyGlobal('AbortSignal', v, () => events().AbortSignal));
}
