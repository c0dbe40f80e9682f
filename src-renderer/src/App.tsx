import { useEffect } from 'react';
import { studio } from './api/studio.ts';
import { Toasts } from './components/Toasts.tsx';
import { AdvicePanel } from './features/advice/AdvicePanel.tsx';
import { ConsolePane } from './features/console/ConsolePane.tsx';
import { CredentialsPage } from './features/credentials/CredentialsPage.tsx';
import { EditorPane } from './features/editor/EditorPane.tsx';
import { EngineBanner, EngineNotices } from './features/engine/EngineBanner.tsx';
import { FunctionList } from './features/functions/FunctionList.tsx';
import { HistoryPane } from './features/history/HistoryPane.tsx';
import { McpPage } from './features/mcp/McpPage.tsx';
import { PromptDialog } from './features/prompts/PromptDialog.tsx';
import { SettingsPane } from './features/settings/SettingsPane.tsx';
import { TestsPane } from './features/savedTests/TestsPane.tsx';
import { app, refreshFunctions, type Page, type Tab } from './store/app.ts';
import { draft, isDirty, loadDraft, saveDraft } from './store/draft.ts';

const PAGES: Array<[Page, string]> = [
  ['functions', 'Functions'],
  ['credentials', 'Credentials'],
  ['mcp', 'MCP'],
];
const TABS: Array<[Tab, string]> = [
  ['editor', 'Code'],
  ['settings', 'Schema & settings'],
  ['console', 'Test console'],
  ['history', 'History'],
  ['tests', 'Tests'],
  ['advice', 'Advice'],
];

export function App() {
  const { page, tab, selected } = app.use();
  const record = draft.use((s) => s.record);
  const dirty = draft.use((s) => isDirty(s));

  useEffect(() => {
    void refreshFunctions();
    const off = studio.on('catalog:changed', () => void refreshFunctions());
    // Closing with unsaved changes asks first (main shows the dialog).
    const beforeUnload = (e: BeforeUnloadEvent): void => {
      if (isDirty()) e.preventDefault();
    };
    window.addEventListener('beforeunload', beforeUnload);
    const keys = (e: KeyboardEvent): void => {
      if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 's') {
        e.preventDefault();
        void saveDraft();
      }
    };
    window.addEventListener('keydown', keys);
    return () => {
      off();
      window.removeEventListener('beforeunload', beforeUnload);
      window.removeEventListener('keydown', keys);
    };
  }, []);

  useEffect(() => {
    if (selected) void loadDraft(selected);
  }, [selected]);

  return (
    <div className="app">
      <header className="topbar">
        <span className="brand">Callable Studio</span>
        <nav>
          {PAGES.map(([id, label]) => (
            <button key={id} className={page === id ? 'active' : ''} onClick={() => app.set({ page: id })}>
              {label}
            </button>
          ))}
        </nav>
      </header>
      <EngineBanner />
      <EngineNotices />
      {page === 'functions' && (
        <div className="workspace">
          <FunctionList />
          <main className="main">
            {record ? (
              <>
                <div className="tabs" role="tablist">
                  {TABS.map(([id, label]) => (
                    <button key={id} role="tab" aria-selected={tab === id} className={tab === id ? 'active' : ''} onClick={() => app.set({ tab: id })}>
                      {label}
                    </button>
                  ))}
                  <span className="spacer" />
                  <span className="fn-title">
                    {record.name}
                    {dirty && <span className="unsaved" title="Unsaved changes"> ● unsaved</span>}
                  </span>
                  <button className="primary" onClick={() => void saveDraft()} disabled={!dirty} title="Save (Ctrl/Cmd+S)">
                    Save
                  </button>
                </div>
                <div className="pane">
                  {tab === 'editor' && <EditorPane />}
                  {tab === 'settings' && <SettingsPane />}
                  {tab === 'console' && <ConsolePane />}
                  {tab === 'history' && <HistoryPane />}
                  {tab === 'tests' && <TestsPane />}
                  {tab === 'advice' && <AdvicePanel />}
                </div>
              </>
            ) : (
              <div className="empty">Create a function from a template to start.</div>
            )}
          </main>
        </div>
      )}
      {page === 'credentials' && <CredentialsPage />}
      {page === 'mcp' && <McpPage />}
      <PromptDialog />
      <Toasts />
    </div>
  );
}
