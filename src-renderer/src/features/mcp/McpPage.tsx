import { useCallback, useEffect, useState } from 'react';
import type { FunctionSummary, McpStatus } from '../../../../src-preload/contract.ts';
import type { ProfileSpec } from '../../../../src-preload/model.ts';
import { asUiError, studio } from '../../api/studio.ts';
import { toast } from '../../store/app.ts';
import { ConfigsCard } from './ConfigsCard.tsx';
import { FeedCard } from './FeedCard.tsx';
import './mcp.css';
import { ProfilesCard } from './ProfilesCard.tsx';
import { ServerCard } from './ServerCard.tsx';

/** The MCP page: the HTTP server, profiles, client configurations and the live feed, one card each. */
export function McpPage() {
  const [status, setStatus] = useState<McpStatus>();
  const [profiles, setProfiles] = useState<ProfileSpec[]>([]);
  const [functions, setFunctions] = useState<FunctionSummary[]>([]);

  useEffect(() => {
    let live = true;
    const off = studio.on('mcp:status', setStatus);
    studio.mcp
      .status({})
      .then((s) => live && setStatus(s))
      .catch((e: unknown) => toast(`MCP status: ${asUiError(e).message}`, 'error'));
    return () => {
      live = false;
      off();
    };
  }, []);

  const refreshCatalog = useCallback(async () => {
    try {
      const [p, f] = await Promise.all([studio.profiles.list({}), studio.functions.list({})]);
      setProfiles(p);
      setFunctions(f);
    } catch (e) {
      toast(`Could not load profiles: ${asUiError(e).message}`, 'error');
    }
  }, []);

  useEffect(() => {
    void refreshCatalog();
    return studio.on('catalog:changed', () => void refreshCatalog());
  }, [refreshCatalog]);

  return (
    <div className="page mcp">
      <h2>MCP</h2>
      <ServerCard status={status} />
      <ProfilesCard profiles={profiles} functions={functions} status={status} onChange={refreshCatalog} />
      <ConfigsCard profiles={profiles} status={status} />
      <FeedCard />
    </div>
  );
}
