// The availability inventory against the routes it describes, over real HTTP against
// the real venue and its PostgreSQL: each row's required and optional filters are the
// parameters the served OpenAPI document gives its route (which the gateway builds from
// the schemas it validates with), each listed filter is one the route takes, and each
// row's text describes the read for a client, nothing about how the venue was built.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertShape } from '../support/response-schemas.ts';
import { TOKENS, VenueProcess } from '../support/venue-process.ts';

let venue: VenueProcess;

before(async () => {
  venue = await VenueProcess.start({ COMPETITION_PROFILE: 'availability-cup' }); // every row, the leaderboard's too
});
after(async () => {
  await venue.stop();
});

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: { enum?: string[]; format?: string; pattern?: string };
}

async function inventory(): Promise<any[]> {
  const answer = await venue.get('/api/v1/data/availability', TOKENS.viewer);
  assert.equal(answer.status, 200, answer.text);
  assertShape('Availability', answer.json);
  return answer.json.reads;
}

async function openApi(): Promise<any> {
  const answer = await venue.get('/api/v1/openapi.json', TOKENS.viewer);
  assert.equal(answer.status, 200, answer.text);
  return answer.json;
}

/** The document's operation of an inventory endpoint ("GET /api/v1/…/{id}"). */
function operationOf(doc: any, endpoint: string): { method: string; path: string; operation: any } {
  const [method, path] = endpoint.split(' ') as [string, string];
  const operation = doc.paths[path]?.[method.toLowerCase()];
  assert.ok(operation, `${endpoint}: the OpenAPI document has this route`);
  return { method, path, operation };
}

const sorted = (names: string[]) => [...names].sort();

/** A value the parameter's schema accepts: the first enum value, a date-time, a UUID, or the first candidate its pattern takes. */
function valid(parameter: Parameter): string {
  const { schema } = parameter;
  if (schema.enum !== undefined) return schema.enum[0]!;
  if (schema.format === 'date-time') return new Date(Date.now() - 3_600_000).toISOString();
  if (schema.format === 'uuid') return crypto.randomUUID();
  const candidate = ['1', 'market-data-top-of-book', 'run-local'].find((value) => schema.pattern !== undefined && new RegExp(schema.pattern).test(value));
  assert.ok(candidate !== undefined, `${parameter.name}: a value for ${JSON.stringify(schema)}`);
  return candidate;
}

/** The route's URL with its path parameters filled. */
function urlOf(path: string, parameters: Parameter[]): string {
  let url = path;
  for (const parameter of parameters.filter((p) => p.in === 'path')) url = url.replace(`{${parameter.name}}`, encodeURIComponent(valid(parameter)));
  return url;
}

const tokenFor = (path: string) => (path.startsWith('/api/v1/orders/') ? TOKENS.traderA : TOKENS.operator);

test("every inventory row's required and optional filters are its route's parameters in the served OpenAPI document", async () => {
  const doc = await openApi();
  const rows = await inventory();
  assert.ok(
    rows.some((row) => row.name === 'settlement-leaderboard'),
    'COMPETITION_PROFILE is set: the leaderboard row is listed',
  );
  for (const row of rows) {
    const { operation } = operationOf(doc, row.endpoint);
    const parameters: Parameter[] = operation.parameters ?? [];
    assert.ok(
      parameters.every((p) => p.in === 'path' || p.in === 'query'),
      `${row.endpoint}: read filters are path or query parameters`,
    );
    assert.deepEqual(sorted(row.requiredFilters), sorted(parameters.filter((p) => p.required).map((p) => p.name)), `${row.endpoint}: requiredFilters`);
    assert.deepEqual(sorted(row.optionalFilters), sorted(parameters.filter((p) => !p.required).map((p) => p.name)), `${row.endpoint}: optionalFilters`);
  }
  const score = rows.find((row) => row.name === 'settlement-score');
  assert.deepEqual(sorted(score.optionalFilters), ['agedFailAfterSeconds', 'asOf'], 'the score read takes asOf and agedFailAfterSeconds');
});

test('every optional filter an inventory row lists is taken by its route; a parameter it does not list is refused where the route validates its query', async () => {
  const doc = await openApi();
  for (const row of await inventory()) {
    const { method, path, operation } = operationOf(doc, row.endpoint);
    const parameters: Parameter[] = operation.parameters ?? [];
    const url = urlOf(path, parameters);
    const call = (query: string) => venue.request(method, `${url}${query}`, { token: tokenFor(path) });
    for (const name of row.optionalFilters) {
      const parameter = parameters.find((p) => p.name === name)!;
      const answer = await call(`?${name}=${encodeURIComponent(valid(parameter))}`);
      assert.ok(answer.status < 400 || answer.status === 404, `${row.endpoint}?${name}: ${answer.status} ${answer.text}`);
    }
    if (operation.responses['400'] !== undefined) {
      const refused = await call('?notAFilter=1');
      assert.equal(refused.status, 400, `${row.endpoint}: an unlisted parameter`);
      assert.deepEqual(
        refused.json.details.map((d: any) => d.field),
        ['notAFilter'],
        row.endpoint,
      );
    }
  }
});

test("every inventory row's text describes the read for a client: no source files, build history, benchmarks or internal notes", async () => {
  const internal = /\.ts\b|\bissue\b|bench|measur|\btodo\b|fixme|\bhack|previous|formerly|no longer|used to|for now|run before|fast\s+hour|\bnote\b|kept in memory|gateway memory/i;
  for (const row of await inventory()) {
    for (const field of ['name', 'endpoint', 'freshnessModel', 'visibilityScope'] as const) {
      assert.doesNotMatch(row[field], internal, `${row.name}.${field}: ${row[field]}`);
    }
  }
});
