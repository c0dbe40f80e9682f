import { vendorServer } from './vendor.ts';

/**
 * A stand-in for the API test/fixtures/openapi/pet_shelter.yaml describes, strict as real APIs are:
 * a body that sets what the server assigns (id, status, createdAt), misses a required field or
 * carries an unknown one is a 400; a query value it cannot use (tag=null) is a 400; DELETE is an
 * empty 204.
 */
export async function petShelter() {
  const pets = new Map<number, Record<string, unknown>>([[10, { id: 10, name: 'Rex', species: 'dog', status: 'available', tags: ['friendly'], createdAt: '2026-01-02T03:04:05Z' }]]);
  const writable = new Set(['name', 'species', 'tags', 'intakeCode']);
  const vendor = await vendorServer((req, res) => {
    const url = new URL(req.url, 'http://shelter');
    const answer = (status: number, value?: unknown) => {
      res.statusCode = status;
      if (value === undefined) return res.end();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(value));
    };
    const id = /^\/v1\/pets\/(\d+)$/.exec(url.pathname)?.[1];
    if (req.method === 'POST' && url.pathname === '/v1/pets') {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(req.body) as Record<string, unknown>;
      } catch {
        return answer(400, { error: 'the body is not JSON' });
      }
      const assigned = Object.keys(body).filter((k) => !writable.has(k));
      if (assigned.length > 0) return answer(400, { error: `read-only or unknown field: ${assigned.join(', ')}` });
      if (typeof body.name !== 'string' || !['dog', 'cat', 'rabbit'].includes(String(body.species))) return answer(400, { error: 'name and species are required' });
      const pet = { id: Math.max(0, ...pets.keys()) + 1, name: body.name, species: body.species, status: 'available', tags: body.tags ?? [], createdAt: new Date(0).toISOString() };
      pets.set(pet.id, pet);
      return answer(201, pet);
    }
    if (req.method === 'GET' && url.pathname === '/v1/pets') {
      const tag = url.searchParams.get('tag');
      if (tag === 'null' || tag === '') return answer(400, { error: `no such tag: "${tag}"` });
      return answer(200, [...pets.values()].filter((p) => tag === null || (p.tags as string[]).includes(tag)));
    }
    if (id !== undefined && pets.has(Number(id))) {
      if (req.method === 'GET') return answer(200, pets.get(Number(id)));
      if (req.method === 'DELETE') {
        pets.delete(Number(id));
        return answer(204);
      }
    }
    answer(404, { error: 'not found' });
  });
  return { ...vendor, pets, base: `http://127.0.0.1:${vendor.port}/v1` };
}
