// Bounded everywhere: a full ring and a full in-flight table answer 503 with
// Retry-After; the refused command leaves no trace and its retry (same key) works.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertShape } from '../support/response-schemas.ts';
import { submitBody, TOKENS, VenueProcess } from '../support/venue-process.ts';

const INSTRUMENT = '11111111-1111-4111-8111-111111111111';

async function burstUntilRefused(venue: VenueProcess): Promise<void> {
  for (let round = 0; round < 5; round++) {
    const commands = Array.from({ length: 200 }, (_, n) => ({ body: submitBody({ instrumentId: INSTRUMENT, side: 'BUY', price: String(1 + (n % 50)) }), key: crypto.randomUUID() }));
    const answers = await Promise.all(commands.map(({ body, key }) => venue.postOnNewConnection(body, key, 'burst')));
    const refused = commands.filter((_, n) => answers[n]!.status === 503);
    for (const [n, answer] of answers.entries()) {
      assert.ok(answer.status === 200 || answer.status === 503, `unexpected ${answer.status}: ${answer.text}`);
      if (answer.status === 503) {
        assert.equal(answer.retryAfter, '1');
        const json = JSON.parse(answer.text);
        assertShape('Error', json);
        assert.equal(json.code, 'OVERLOADED');
        const status = await venue.get(`/api/v1/commands/${commands[n]!.body.commandId as string}`, TOKENS.operator);
        assert.equal(status.status, 404, 'a refused command leaves no trace');
      }
    }
    if (refused.length === 0) continue;
    // The venue was not broken by it: each refused command goes through on retry with its key.
    for (const { body, key } of refused) {
      const retry = await venue.postOnNewConnection(body, key, 'burst');
      assert.equal(retry.status, 200, retry.text);
      assert.equal(JSON.parse(retry.text).outcome.accepted.orderId, body.orderId);
    }
    return;
  }
  assert.fail('five bursts of 200 concurrent commands never met a full ring');
}

let tinyRing: VenueProcess;
let tinyInFlight: VenueProcess;
before(async () => {
  [tinyRing, tinyInFlight] = await Promise.all([
    VenueProcess.start({ COMMAND_RING_SLOTS: '1', GATEWAY_THREADS: '1', MATCHING_SHARDS: '1' }),
    VenueProcess.start({ MAX_IN_FLIGHT: '1', GATEWAY_THREADS: '1', MATCHING_SHARDS: '1' }),
  ]);
});
after(async () => {
  assert.deepEqual(await Promise.all([tinyRing.stop(), tinyInFlight.stop()]), [0, 0]);
});

test('a full command ring answers 503 OVERLOADED with Retry-After, and the command can be retried', async () => {
  await burstUntilRefused(tinyRing);
});

test('a full in-flight table answers 503 OVERLOADED with Retry-After, and the command can be retried', async () => {
  await burstUntilRefused(tinyInFlight);
});
