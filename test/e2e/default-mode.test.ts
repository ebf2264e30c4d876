// PROCESSING_MODE sets the default; X-Processing-Mode overrides it per request.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { assertShape } from '../support/response-schemas.ts';
import { DEFAULT_PRINCIPALS_FILE } from '../../gateway/principals.ts';
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

test('a start on the development principals warns at start; one naming its own file does not', async () => {
  const warning = /"level":40[^\n]*DEVELOPMENT PRINCIPALS IN EFFECT/;
  assert.match(venue.log, warning);
  const folder = mkdtempSync(path.join(os.tmpdir(), 'venue-principals-'));
  const file = path.join(folder, 'principals.json');
  copyFileSync(DEFAULT_PRINCIPALS_FILE, file);
  const own = await VenueProcess.start({ PRINCIPALS_FILE: file, GATEWAY_THREADS: '1', MATCHING_SHARDS: '1' });
  try {
    assert.match(own.log, /venue listening/);
    assert.doesNotMatch(own.log, /DEVELOPMENT PRINCIPALS/);
  } finally {
    assert.equal(await own.stop(), 0);
    rmSync(folder, { recursive: true, force: true });
  }
});
