import { useEffect, useState } from 'react';
import type { PromptView } from '../../../../src-preload/contract.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { JsonView } from '../../components/JsonView.tsx';
import { toast } from '../../store/app.ts';
import { SchemaForm, type SchemaValidity } from '../forms/SchemaForm.tsx';
import './prompts.css';

/**
 * What MCP clients ask the person at the studio, from any process on this data folder: approve a
 * call to a destructive function (allow once, allow for this session, deny), or fill in a
 * function's elicitation form. One at a time, oldest first; a prompt its caller withdrew or that
 * passed its deadline leaves on its own.
 */
export function PromptDialog() {
  const [pending, setPending] = useState<PromptView[]>([]);

  useEffect(() => {
    let current = true;
    const off = studio.on('prompts:pending', (list) => setPending(list));
    studio.prompts.list({}).then(
      (list) => current && setPending(list),
      () => {},
    );
    return () => {
      current = false;
      off();
    };
  }, []);

  const prompt = pending[0];
  if (!prompt) return null;
  return <PromptCard key={prompt.id} prompt={prompt} more={pending.length - 1} onAnswered={(id) => setPending((list) => list.filter((p) => p.id !== id))} />;
}

function PromptCard({ prompt, more, onAnswered }: { prompt: PromptView; more: number; onAnswered: (id: string) => void }) {
  const [busy, setBusy] = useState(false);
  const [value, setValue] = useState<unknown>({});
  const [validity, setValidity] = useState<SchemaValidity>({ valid: false, pending: true, problems: [] });
  const left = useSecondsLeft(prompt.expiresAt);
  const approval = prompt.kind === 'approval';

  const answer = async (action: 'accept' | 'decline' | 'cancel', content?: Record<string, string | number | boolean | string[]>): Promise<void> => {
    setBusy(true);
    try {
      await studio.prompts.answer({ id: prompt.id, action, ...(content ? { content } : {}) });
    } catch (e) {
      toast(`Not answered: ${asUiError(e).message}`, 'error');
    }
    onAnswered(prompt.id);
  };

  const title = approval ? `Allow ${prompt.functionName}?` : `${prompt.functionName} asks for input`;
  return (
    <div className="modal-backdrop">
      <div className="modal prompt-dialog" role="dialog" aria-label={approval ? 'Approve a call' : 'Input requested'}>
        <h3>{title}</h3>
        <dl className="prompt-facts">
          <dt>Function</dt>
          <dd className="mono" data-testid="prompt-function">
            {prompt.functionName}
          </dd>
          <dt>Client</dt>
          <dd data-testid="prompt-client">{prompt.client ?? 'not known'}</dd>
        </dl>
        <p className="prompt-message">{prompt.message}</p>
        {approval && (
          <div className="prompt-args" data-testid="prompt-args" aria-label="Arguments">
            <strong>Arguments</strong>
            <JsonView value={prompt.args} />
          </div>
        )}
        {!approval && prompt.schema && (
          <SchemaForm schema={prompt.schema} value={value} onChange={setValue} onValidity={setValidity} idPrefix={`prompt-${prompt.id.slice(0, 8)}`} disabled={busy} />
        )}
        <p className="hint">
          {left > 0 ? `The call waits ${left} s more for your answer.` : 'The call has stopped waiting.'}
          {more > 0 ? ` ${more} more waiting after this one.` : ''}
        </p>
        <div className="row">
          {approval ? (
            <>
              <button className="primary" disabled={busy} onClick={() => void answer('accept', { decision: 'allow_once' })}>
                Allow once
              </button>
              {prompt.sessionScoped && (
                <button disabled={busy} onClick={() => void answer('accept', { decision: 'allow_session' })}>
                  Allow for this session
                </button>
              )}
              <button className="danger" disabled={busy} onClick={() => void answer('accept', { decision: 'deny' })}>
                Deny
              </button>
            </>
          ) : (
            <>
              <button className="primary" disabled={busy || !validity.valid} onClick={() => void answer('accept', (value ?? {}) as Record<string, string | number | boolean | string[]>)}>
                Submit
              </button>
              <button disabled={busy} onClick={() => void answer('decline')}>
                Decline
              </button>
              <button disabled={busy} onClick={() => void answer('cancel')}>
                Cancel
              </button>
            </>
          )}
        </div>
      </div>
    </div>
  );
}

/** Whole seconds until `at` (ms since the epoch), ticking. */
function useSecondsLeft(at: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return Math.max(0, Math.ceil((at - now) / 1000));
}
