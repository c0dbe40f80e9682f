import { StudioError } from '../model/index.ts';
import { readFunctionFolders } from './files.ts';
import type { SaveInput } from './repository.ts';

/** A function a new one starts from: one function folder of the templates folder, by its name. */
export interface Template {
  id: string;
  title: string;
  description: string;
  input: SaveInput;
}

/** The templates in `dir` (the app's `resources/examples`), sorted by id. */
export function readTemplates(dir: string): Template[] {
  return readFunctionFolders(dir).map((input) => {
    const id = input.spec.name as string;
    return { id, title: (input.spec.title as string | undefined) ?? id, description: (input.spec.description as string | undefined) ?? '', input };
  });
}

/** The template `id` of `dir`; an unknown id is a not_found error that names the ones there are. */
export function findTemplate(dir: string, id: string): Template {
  const all = readTemplates(dir);
  const found = all.find((t) => t.id === id);
  if (!found) throw new StudioError('not_found', `no template "${id}"; the templates are ${all.map((t) => t.id).join(', ')}`);
  return found;
}
