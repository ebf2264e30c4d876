// The gateway validates requests with code ajv compiled ahead of time
// (gateway/validators-build.ts writes gateway/validators.generated.ts). The file must be
// what the schemas compile to now, must judge every body as ajv compiling the same schemas
// at run time does (the same verdicts, the same error objects), and must spare a gateway
// ajv's compiler at start.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { requestFormats } from '../../gateway/validator-formats.ts';
import { validatorSchemas } from '../../gateway/schemas.ts';
import { GENERATED_FILE, generateValidatorsModule } from '../../gateway/validators-build.ts';
import { loadValidators, RequestValidator, type OrderRoute } from '../../gateway/validation.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

test('validators.generated.ts is what the schemas compile to now (run node --import tsx gateway/validators-build.ts after changing one)', () => {
  assert.equal(readFileSync(GENERATED_FILE, 'utf8'), generateValidatorsModule());
});

const UUID = '0b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b';
const common = {
  commandId: UUID,
  traceId: '1b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
  causationId: '2b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
  correlationId: '3b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
  actorId: 'trader-a',
  occurredAt: '2026-11-28T10:00:00.123456Z',
};
const target = {
  ...common,
  orderId: '4b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
  runId: 'run-1',
  venueSessionId: 'session-1',
  instrumentId: '5b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
  participantId: '6b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
  accountId: '7b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
};
const VALID: Record<string, Record<string, unknown>> = {
  submit: {
    ...common,
    orderId: '4b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
    instrumentId: '5b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
    participantId: '6b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
    accountId: '7b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b',
    side: 'BUY',
    orderType: 'LIMIT',
    quantityUnits: '100',
    limitPrice: '101.25',
    currency: 'USD',
    timeInForce: 'DAY',
    clientOrderId: 'c-1',
  },
  cancel: { ...target, reason: 'no longer wanted' },
  modify: { ...target, quantityUnits: '50', limitPrice: '101.5' },
  'cancel-by-client-order': { ...common, participantId: '6b9c5e4a-7f3d-4c1e-9a2b-3c4d5e6f7a8b', clientOrderId: 'c-1', reason: 'done' },
};

const ODD_VALUES: unknown[] = [
  // Each length bound on both sides: 32 (decimals), 64 (session ids), 128 (actorId), 500 (reasons).
  '',
  'x',
  'BUY',
  'LIMIT_HIDDEN',
  'IOC',
  '0',
  '-1',
  '1e3',
  '101.1234567891',
  '9000001',
  'A'.repeat(32),
  'A'.repeat(33),
  'A'.repeat(64),
  'A'.repeat(65),
  'A'.repeat(128),
  'A'.repeat(129),
  'A'.repeat(500),
  'A'.repeat(501),
  UUID.toUpperCase(),
  `${UUID}0`,
  UUID.replaceAll('-', ''),
  '2026-11-28T10:00:00Z',
  '2026-11-28 10:00:00Z',
  '2026-02-30T10:00:00Z',
  '2026-11-28T25:00:00+01:00',
  'é'.repeat(40),
  0,
  1.5,
  -2,
  true,
  null,
  [],
  ['a'],
  {},
  { units: '1' },
];

/** A valid body changed in 1-3 places: a field dropped, set to an odd value, or added. */
function mutate(body: Record<string, unknown>, random: SeededRandom): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body };
  const keys = Object.keys(body);
  for (let k = 1 + random.below(3); k > 0; k--) {
    const choice = random.below(10);
    if (choice < 2) delete out[keys[random.below(keys.length)]!];
    else if (choice < 9) out[keys[random.below(keys.length)]!] = ODD_VALUES[random.below(ODD_VALUES.length)];
    else out[`extra${random.below(3)}`] = 'x';
  }
  return out;
}

test('the compiled validators give the verdicts and error objects of ajv compiling the same schemas at run time', () => {
  const ajv = new Ajv({ allErrors: true, strict: true, coerceTypes: false });
  for (const [name, format] of Object.entries(requestFormats())) ajv.addFormat(name, format);
  const compiled = loadValidators(); // the generated code, wired as the gateway wires it
  const random = new SeededRandom(20261128);
  const samples: Record<string, unknown>[] = [
    {},
    { projectionName: 'x' },
    { projectionName: '' },
    { instrumentId: 'nope' },
    { instrumentId: UUID },
    { levels: '5' },
    { limit: 'abc' },
    { scenarioRunId: 'run 1' },
    { scenarioRunId: 'run-1' },
    { facts: [] },
    { facts: [{}] },
    { scenarioRunId: 'ok', facts: [{ kind: 'x' }] },
    { extra: 1 },
  ];
  let refused = 0;
  let passed = 0;
  for (const [name, schema] of Object.entries(validatorSchemas())) {
    const runtime = ajv.compile(schema);
    const valid = VALID[name];
    const bodies = valid === undefined ? samples : [valid, ...Array.from({ length: 400 }, () => mutate(valid, random))];
    for (const body of bodies) {
      const expected = runtime(body);
      assert.equal(compiled[name]!(body), expected, `${name}: ${JSON.stringify(body)}`);
      assert.deepEqual(compiled[name]!.errors ?? null, runtime.errors ?? null, `${name}: ${JSON.stringify(body)}`);
      if (expected) passed++;
      else refused++;
    }
  }
  assert.ok(refused > 1000 && passed >= 4, `refused ${refused}, passed ${passed}`);
  // And through the gateway's own wrapper: each valid body passes, with its price and quantity parsed.
  const validator = new RequestValidator();
  for (const [route, body] of Object.entries(VALID)) assert.equal(validator.validate(route as OrderRoute, body).ok, true, route);
  assert.deepEqual(validator.validate('submit', { ...VALID.submit, side: 'HOLD' }), { ok: false, details: [{ field: 'side', message: 'side must be one of BUY, SELL' }] });
});

test("a gateway's validator loads without ajv's compiler", () => {
  const script = [
    "import { createRequire } from 'node:module';",
    "const { RequestValidator } = await import('./gateway/validation.ts');",
    'const validator = new RequestValidator();',
    "const verdict = validator.validate('submit', {});",
    'const loaded = Object.keys(createRequire(import.meta.url).cache).filter((file) => /node_modules\\/ajv(-formats)?\\//.test(file));',
    'console.log(JSON.stringify({ ok: verdict.ok, loaded }));',
  ].join('\n');
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const report = JSON.parse(run.stdout.trim().split('\n').pop()!) as { ok: boolean; loaded: string[] };
  assert.equal(report.ok, false, 'an empty submit is refused');
  assert.ok(report.loaded.length > 0, 'the runtime helpers were loaded through require');
  const compiler = report.loaded.filter((file) => !/ajv\/dist\/runtime\/|ajv-formats\/dist\/formats\.js$/.test(file));
  assert.deepEqual(compiler, [], 'only the runtime helpers and the formats file');
});
