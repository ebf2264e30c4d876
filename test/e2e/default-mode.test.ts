// PROCESSING_MODE sets the default; X-Processing-Mode overrides it per request.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { assertShape } from '../support/response-schemas.ts';
import { submitBody, VenueProcess } from '../support/venue-process.ts';

let venue: VenueProcess;
before(async () => {
  venue = await VenueProcess.start({ PROCESSING_MODE: 'captured-ack', GATEWAY_THREADS: '1', MATCHING_SHARDS: '1' });
});
after(async () => {
  assert.equal(await venue.stop(), 0);
});

test('without the header, the server default PROCESSING_MODE applies', async () => {
  const answer = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: crypto.randomUUID() }));
  assert.equal(answer.status, 202);
  assertShape('AcceptedPointer', answer.json);
  assert.equal(answer.json.processingMode, 'captured-ack');
});

test('the header overrides the default for one request', async () => {
  const answer = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: crypto.randomUUID() }), { mode: 'sync-result' });
  assert.equal(answer.status, 200);
  assertShape('ResultEnvelope', answer.json);
});

test('a bad PROCESSING_MODE stops the start with a message naming it', async () => {
  await assert.rejects(VenueProcess.start({ PROCESSING_MODE: 'eventually' }), /PROCESSING_MODE must be one of/);
});
