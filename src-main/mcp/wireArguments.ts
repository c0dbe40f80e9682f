// The SDK's parsed tools/call request drops an argument named "__proto__" (a vendor's field), so the
// local servers (src-main/mcp/server.ts) and the deployed gateway Worker (src-main/deploy/workers/)
// take a call's arguments as they came off the wire, where JSON.parse keeps it as an own key. Pure
// (no SDK import), so the Workers bundle it.

type Dispatch = (raw: { id?: unknown; method?: string; params?: { arguments?: unknown } }, extra?: unknown) => void;

/**
 * Keeps each tools/call's arguments as sent, by request id, and returns the function that takes
 * them (once) in the call's handler. This reaches into the SDK's request dispatch (`_onrequest`);
 * if a later SDK renames it, `take` finds nothing and the parsed arguments are used: only
 * arguments named "__proto__" are affected, never the server itself.
 */
export function keepWireArguments(server: object): (id: unknown) => unknown {
  const kept = new Map<unknown, unknown>();
  const internals = server as { _onrequest?: Dispatch };
  const onrequest = internals._onrequest?.bind(server);
  if (onrequest) {
    internals._onrequest = (raw, extra) => {
      if (raw.method === 'tools/call' && raw.params?.arguments !== undefined) {
        kept.set(raw.id, raw.params.arguments);
        // A request the SDK refuses never reaches the handler: keep only the latest few.
        if (kept.size > 64) kept.delete(kept.keys().next().value);
      }
      onrequest(raw, extra);
    };
  }
  return (id) => {
    const args = kept.get(id);
    kept.delete(id);
    return args;
  };
}
