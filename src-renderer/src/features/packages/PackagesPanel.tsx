import { useEffect, useState, type FormEvent } from 'react';
import type { FunctionRecord } from '../../../../src-preload/model.ts';
import type { PackagesView } from '../../../../src-preload/contract.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { toast } from '../../store/app.ts';
import { draft } from '../../store/draft.ts';
import './packages.css';

/**
 * The npm packages of the function being edited: each as asked for and as locked, the bundle they
 * make, and adding (`name[@range]`, several separated by spaces) or removing them. The engine
 * installs, locks, bundles and saves exactly as `callable add`/`remove` do; its one-line refusal
 * is shown here, and nothing changes.
 */
export function PackagesPanel({ name }: { name: string }) {
  const revision = draft.use((s) => s.record?.revision);
  const [view, setView] = useState<PackagesView>();
  const [specs, setSpecs] = useState('');
  const [busy, setBusy] = useState<string>();
  const [error, setError] = useState<string>();

  // Read again on each revision, and when any function changes (a `callable add` in a terminal).
  useEffect(() => {
    let current = true;
    const load = (): void => {
      studio.packages.list({ name }).then(
        (v) => current && setView(v),
        (e: unknown) => current && setError(asUiError(e).message),
      );
    };
    load();
    const off = studio.on('catalog:changed', load);
    return () => {
      current = false;
      off();
    };
  }, [name, revision]);

  /** A new revision was saved with the packages: the editor moves to it and keeps whatever was typed. */
  const saved = (record: FunctionRecord, packages: PackagesView, message: string): void => {
    setView(packages);
    setError(undefined);
    draft.set((s) => (s.record?.name === record.name ? { record } : {}));
    toast(message);
  };

  const add = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    const wanted = specs.trim().split(/\s+/).filter(Boolean);
    if (wanted.length === 0 || busy) return;
    setBusy('add');
    try {
      const { record, packages } = await studio.packages.add({ name, specs: wanted });
      setSpecs('');
      saved(record, packages, `Added ${wanted.join(', ')} to ${name} (revision ${record.revision})`);
    } catch (e) {
      setError(asUiError(e).message);
    } finally {
      setBusy(undefined);
    }
  };

  const remove = async (pkg: string): Promise<void> => {
    if (busy) return;
    setBusy(pkg);
    try {
      const { record, packages } = await studio.packages.remove({ name, packages: [pkg] });
      saved(record, packages, `Removed ${pkg} from ${name} (revision ${record.revision})`);
    } catch (e) {
      setError(asUiError(e).message);
    } finally {
      setBusy(undefined);
    }
  };

  return (
    <aside className="packages-panel" aria-label="Packages" data-testid="packages-panel">
      <h3>npm packages</h3>
      {view && view.packages.length === 0 && <p className="muted">No packages yet. Add one, then import it by name: import ms from &apos;ms&apos;.</p>}
      {view && view.packages.length > 0 && (
        <>
          <table>
            <tbody>
              {view.packages.map((p) => (
                <tr key={p.name} data-testid={`package-${p.name}`}>
                  <td className="mono">{p.name}</td>
                  <td className="mono" title="locked version">
                    {p.version}
                  </td>
                  <td className="muted mono" title="range asked for">
                    {p.range}
                  </td>
                  <td>
                    <button onClick={() => void remove(p.name)} disabled={busy !== undefined} aria-label={`Remove ${p.name}`}>
                      {busy === p.name ? 'Removing…' : 'Remove'}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <p className="muted" data-testid="packages-bundle">
            {view.locked} package{view.locked === 1 ? '' : 's'} locked · bundle {(view.bundleBytes / 1024).toFixed(1)} kB
          </p>
        </>
      )}
      <form className="row" onSubmit={(e) => void add(e)}>
        <input aria-label="Package to add" placeholder="name or name@range" value={specs} onChange={(e) => setSpecs(e.target.value)} disabled={busy !== undefined} />
        <button type="submit" disabled={busy !== undefined || specs.trim() === ''}>
          {busy === 'add' ? 'Installing…' : 'Add'}
        </button>
      </form>
      {error && (
        <p className="packages-error error-text" role="alert" data-testid="packages-error">
          {error}
        </p>
      )}
    </aside>
  );
}
