import { asUiError } from '../../api/studio.ts';
import { toast } from '../../store/app.ts';

/** Copies `text` to the clipboard and says so (or why not) in a toast. */
export async function copy(text: string, what: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    toast(`${what} copied`);
  } catch (e) {
    toast(`Could not copy: ${asUiError(e).message}`, 'error');
  }
}
