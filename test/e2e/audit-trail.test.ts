// The audit trail (API contract, "Audit trail"): GET /admin/v1/audit/commands/{commandId}
// shows every order command exactly as it arrived and was validated, durable once it was
// acknowledged: the same after kill -9 and a restart. Over HTTP against a real venue.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { INTAKE_LAYOUT_PACKED, INTAKE_RECORD_BYTES } from '../../core/intake-record.ts';
import { commitCaptured } from '../support/captured-intake.ts';
import { withClient } from '../support/database.ts';
import { cancelBody, cancelByClientOrderBody, dataDirs, modifyBody, stopAfter, storageUrl, submitBody, TOKENS, VenueProcess, type HttpAnswer } from '../support/venue-process.ts';

const INSTRUMENT = 'cc000000-0000-4000-8000-000000000001';
const dataDir = dataDirs();

async function ready(venue: VenueProcess): Promise<void> {
  for (let k = 0; (await venue.get('/readyz')).status !== 200; k++) {
    assert.ok(k < 600, 'the venue never became ready');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const audit = (venue: VenueProcess, commandId: string, token: string = TOKENS.operator): Promise<HttpAnswer> => venue.get(`/admin/v1/audit/commands/${commandId}`, token);

test('the audit trail shows each command exactly as validated, every field, durable across kill -9 and a restart', async () => {
  const dir = dataDir();
  let venue = await VenueProcess.start({ DATA_DIR: dir });
  await stopAfter(
    () => venue,
    async () => {
      await ready(venue);
      const started = Date.now();
      const sent: { route: string; body: Record<string, unknown>; key: string; clientId: string; mode: string }[] = [];
      const send = async (route: string, body: Record<string, unknown>, mode: string) => {
        const key = `audit-${sent.length}`;
        const clientId = `desk-${sent.length}`;
        const answer = await venue.order(route, body, { key, clientId, mode });
        assert.ok(answer.status === 200 || answer.status === 202, answer.text);
        sent.push({ route, body, key, clientId, mode });
      };
      const placed: Record<string, unknown> = { ...submitBody({ instrumentId: INSTRUMENT, price: '101.250', quantity: '10', clientOrderId: 'audit-𝄞' }), actorId: 'bot ☃ 7' };
      await send('/api/v1/orders/submit', placed, 'sync-result');
      await send('/api/v1/orders/modify', modifyBody({ orderId: placed.orderId as string, instrumentId: INSTRUMENT, price: '101.5', quantity: '12' }), 'stream-ack');
      await send('/api/v1/orders/submit', submitBody({ instrumentId: INSTRUMENT, price: '99', quantity: '3', clientOrderId: 'by-client' }), 'accepted-async');
      await send('/api/v1/orders/cancel', { ...cancelBody({ orderId: placed.orderId as string, instrumentId: INSTRUMENT }), reason: 'risk limit\tbreached (desk 7) ☂' }, 'captured-ack');
      await send('/api/v1/orders/cancel-by-client-order', { ...cancelByClientOrderBody('by-client'), reason: 'end of day' }, 'sync-result');

      const seen = new Map<string, unknown>();
      for (const command of sent) {
        let answer = await audit(venue, command.body.commandId as string);
        for (let k = 0; answer.status !== 200 && k < 100; k++) answer = await audit(venue, command.body.commandId as string); // an async command's intake commit
        assert.equal(answer.status, 200, answer.text);
        const { receivedAt, ...rest } = answer.json;
        assert.deepEqual(rest, {
          commandId: command.body.commandId,
          route: command.route,
          principalId: 'trader-a',
          clientId: command.clientId,
          idempotencyKey: command.key,
          processingMode: command.mode,
          body: command.body,
        });
        assert.ok(Date.parse(receivedAt) >= started - 1000 && Date.parse(receivedAt) <= Date.now(), receivedAt);
        seen.set(command.body.commandId as string, answer.json);
      }
      // The body is the text as it arrived: "101.250" stays "101.250", the astral clientOrderId and the tab in the reason whole.
      assert.equal((seen.get(placed.commandId as string) as { body: { limitPrice: string } }).body.limitPrice, '101.250');

      await venue.kill();
      venue = await VenueProcess.start({ DATA_DIR: dir });
      await ready(venue);
      for (const [commandId, before] of seen) assert.deepEqual((await audit(venue, commandId)).json, before, 'the same after kill -9 and restart');
      assert.equal(await venue.stop(), 0);
      venue = await VenueProcess.start({ DATA_DIR: dir });
      await ready(venue);
      for (const [commandId, before] of seen) assert.deepEqual((await audit(venue, commandId)).json, before, 'the same after a graceful restart');
      // What the trail was read from: batches stored packed (texts at their lengths), smaller than whole records.
      const batches = await withClient(await storageUrl(dir), (client) =>
        client.query<{ layout: number | null; bytes: number; records: number }>('SELECT layout, octet_length(payload) AS bytes, record_count AS records FROM runtime.intake_batches'),
      );
      assert.ok(batches.rows.length >= 3, `${batches.rows.length} intake batches`);
      for (const row of batches.rows) {
        assert.equal(row.layout, INTAKE_LAYOUT_PACKED);
        assert.ok(row.bytes < row.records * INTAKE_RECORD_BYTES, `${row.bytes} bytes for ${row.records} records`);
      }
    },
  );
});

test('the audit trail is for operators: 401 without a token, 403 for traders and viewers, 404 for an unknown or malformed id, 405 for another method', async () => {
  const venue = await VenueProcess.start({});
  await stopAfter(
    () => venue,
    async () => {
      await ready(venue);
      const body = submitBody({ instrumentId: INSTRUMENT, price: '5' });
      assert.equal((await venue.order('/api/v1/orders/submit', body)).status, 200);
      const id = body.commandId as string;
      assert.equal((await venue.get(`/admin/v1/audit/commands/${id}`)).status, 401);
      for (const token of [TOKENS.traderA, TOKENS.traderB, TOKENS.viewer]) {
        const denied = await audit(venue, id, token);
        assert.equal(denied.status, 403, denied.text);
        assert.equal(denied.json.code, 'FORBIDDEN');
      }
      assert.equal((await audit(venue, id)).status, 200);
      for (const unknown of [crypto.randomUUID(), 'not-a-uuid']) {
        const missing = await audit(venue, unknown);
        assert.equal(missing.status, 404, missing.text);
        assert.equal(missing.json.code, 'NOT_FOUND');
      }
      const posted = await venue.request('POST', `/admin/v1/audit/commands/${id}`, { token: TOKENS.operator });
      assert.equal(posted.status, 405);
    },
  );
});

test('a command captured and re-driven after a crash has its audit record: the intake record and the text stored with it', async () => {
  const dir = dataDir();
  let venue = await VenueProcess.start({ DATA_DIR: dir });
  await ready(venue);
  assert.equal(await venue.stop(), 0);
  const captured: Record<string, unknown> = { ...submitBody({ instrumentId: INSTRUMENT, price: '42', quantity: '2' }), actorId: 'crash-bot' };
  await commitCaptured(dir, [{ submit: captured, token: TOKENS.traderA, clientId: 'crash-desk', idempotencyKey: 'crash-1', processingMode: 1, shards: 2 }]);
  venue = await VenueProcess.start({ DATA_DIR: dir });
  await stopAfter(
    () => venue,
    async () => {
      await ready(venue);
      const answer = await audit(venue, captured.commandId as string);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(
        [answer.json.route, answer.json.clientId, answer.json.idempotencyKey, answer.json.processingMode, answer.json.body],
        ['/api/v1/orders/submit', 'crash-desk', 'crash-1', 'captured-ack', captured],
      );
    },
  );
});
