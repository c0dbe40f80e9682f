// The guarded fetch's name lookups: an answer is used for a few seconds (a redirect hop and the next
// request to the same name do not wait for DNS), and every use of it is checked again.
import { describe, expect, it } from 'vitest';
import { guardedFetch, type FetchPolicy, type Resolver } from '../../src-main/engine/net/guardedFetch.ts';
import type { TraceEntry } from '../../src-main/engine/model/index.ts';

function policy(resolver: Resolver, trace: TraceEntry[]): FetchPolicy {
  return {
    allowedHosts: ['internal.test', 'flaky.test'],
    maxResponseBytes: 1024,
    credential: () => Promise.reject(new Error('no credentials here')),
    resolver,
    signal: new AbortController().signal,
    trace: (entry) => trace.push(entry),
  };
}
const get = (url: string) => ({ url, method: 'GET', headers: [] as Array<[string, string]>, redirect: 'follow' as const });

describe('name lookups', () => {
  it('asks DNS once for requests close together, and refuses the kept answer each time as it refused the first', async () => {
    let asked = 0;
    const resolver: Resolver = async () => {
      asked++;
      return [{ address: '10.0.0.5', family: 4 }];
    };
    const trace: TraceEntry[] = [];
    for (let i = 0; i < 3; i++) {
      await expect(guardedFetch(get('https://internal.test/x'), policy(resolver, trace))).rejects.toMatchObject({ code: 'egress_refused', message: expect.stringMatching(/internal\.test resolves to a private-network address/) });
    }
    expect(asked).toBe(1);
    expect(trace.map((e) => e.refused)).toEqual([expect.stringMatching(/10\.0\.0\.5/), expect.stringMatching(/10\.0\.0\.5/), expect.stringMatching(/10\.0\.0\.5/)]);
  });

  it('asks again once the answer is 4 s old', async () => {
    const addresses = ['10.0.0.6', '10.0.0.7'];
    let asked = 0;
    const resolver: Resolver = async () => [{ address: addresses[asked++]!, family: 4 }];
    const trace: TraceEntry[] = [];
    await expect(guardedFetch(get('https://internal.test/a'), policy(resolver, trace))).rejects.toMatchObject({ code: 'egress_refused' });
    await new Promise((resolve) => setTimeout(resolve, 4_100));
    await expect(guardedFetch(get('https://internal.test/b'), policy(resolver, trace))).rejects.toMatchObject({ code: 'egress_refused' });
    expect(asked).toBe(2);
    // The second request was checked against the new answer, not the kept one.
    expect(trace.map((e) => e.refused)).toEqual([expect.stringMatching(/10\.0\.0\.6/), expect.stringMatching(/10\.0\.0\.7/)]);
  });

  it('asks again after a failed or empty lookup', async () => {
    let asked = 0;
    const resolver: Resolver = async () => {
      asked++;
      if (asked === 1) throw Object.assign(new Error('temporary failure'), { code: 'EAI_AGAIN' });
      return [];
    };
    const trace: TraceEntry[] = [];
    await expect(guardedFetch(get('https://flaky.test/'), policy(resolver, trace))).rejects.toMatchObject({ code: 'egress_refused', message: expect.stringMatching(/could not be resolved \(EAI_AGAIN\)/) });
    await expect(guardedFetch(get('https://flaky.test/'), policy(resolver, trace))).rejects.toMatchObject({ code: 'egress_refused', message: expect.stringMatching(/has no address/) });
    await expect(guardedFetch(get('https://flaky.test/'), policy(resolver, trace))).rejects.toMatchObject({ code: 'egress_refused', message: expect.stringMatching(/has no address/) });
    expect(asked).toBe(3);
  });
});
