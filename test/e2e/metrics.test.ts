// GET /metrics: operators and viewers scrape the Prometheus text; the counts are gathered
// from every gateway thread's and the persistence thread's shared counters, and move by
// exactly what was sent.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { cancelBody, submitBody, TOKENS, VenueProcess } from '../support/venue-process.ts';
import { StreamClient } from '../support/stream-client.ts';

let venue: VenueProcess;
before(async () => {
  venue = await VenueProcess.start({ GATEWAY_THREADS: '2', MATCHING_SHARDS: '2' });
});
after(async () => {
  assert.equal(await venue.stop(), 0);
});

/** The exposition's samples by name and labels as written (`name{a="1",b="2"}`). */
async function scrape(token: string = TOKENS.operator): Promise<Map<string, number>> {
  const answer = await venue.get('/metrics', token);
  assert.equal(answer.status, 200, answer.text);
  const samples = new Map<string, number>();
  for (const line of answer.text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    samples.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return samples;
}

const value = (samples: Map<string, number>, key: string) => samples.get(key) ?? 0;

test('without a token, or with an unknown one, /metrics answers 401', async () => {
  assert.equal((await venue.get('/metrics')).status, 401);
  const unknown = await venue.get('/metrics', 'not-a-token');
  assert.equal(unknown.status, 401);
  assert.equal(unknown.json.code, 'UNAUTHENTICATED');
});

test('a trader may not scrape the metrics: 403', async () => {
  const answer = await venue.get('/metrics', TOKENS.traderA);
  assert.equal(answer.status, 403);
  assert.equal(answer.json.code, 'FORBIDDEN');
});

test('operators and viewers get the Prometheus text format with every named metric', async () => {
  for (const token of [TOKENS.operator, TOKENS.viewer]) {
    const answer = await venue.get('/metrics', token);
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    for (const name of [
      'venue_http_requests_total',
      'venue_command_duration_seconds',
      'venue_commands_total',
      'venue_journal_commit_duration_seconds',
      'venue_projection_lag_commands',
      'venue_queue_high_water',
      'venue_market_data_subscribers',
      'process_cpu_seconds_total',
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
    ]) {
      assert.match(answer.text, new RegExp(`^# TYPE ${name} `, 'm'), `${name} is exposed`);
    }
    assert.match(answer.text, /^# TYPE venue_command_duration_seconds histogram$/m);
    assert.match(answer.text, /^venue_market_data_subscribers 0$/m);
    assert.match(answer.text, /^venue_projection_lag_commands\{shard="1"\} \d+$/m);
  }
});

test('commands move the request, command and duration counts by exactly what was sent', async () => {
  const instrumentId = crypto.randomUUID();
  const before = await scrape();
  const submits = 5;
  for (let k = 0; k < submits; k++) {
    const answer = await venue.order('/api/v1/orders/submit', submitBody({ instrumentId, price: String(100 + k) }), { mode: 'sync-result' });
    assert.equal(answer.status, 200, answer.text);
  }
  const asyncKey = crypto.randomUUID();
  const asyncBody = submitBody({ instrumentId });
  assert.equal((await venue.order('/api/v1/orders/submit', asyncBody, { mode: 'captured-ack', key: asyncKey })).status, 202);
  assert.equal((await venue.order('/api/v1/orders/submit', asyncBody, { mode: 'captured-ack', key: asyncKey })).status, 202); // the replay
  assert.equal((await venue.order('/api/v1/orders/submit', { ...submitBody({ instrumentId }), quantityUnits: '0' })).status, 400);
  const missing = await venue.order('/api/v1/orders/cancel', cancelBody({ orderId: crypto.randomUUID(), instrumentId }), { mode: 'sync-result' });
  assert.equal(missing.status, 200);
  assert.equal(missing.json.outcome.rejected.code, 'ORDER_NOT_FOUND');
  assert.equal((await venue.get('/api/v1/data/availability', TOKENS.viewer)).status, 200); // answered by the read thread, later
  const later = await scrape();

  const moved = (key: string) => value(later, key) - value(before, key);
  assert.equal(moved('venue_http_requests_total{route="/api/v1/orders/submit",status="200"}'), submits);
  assert.equal(moved('venue_http_requests_total{route="/api/v1/orders/submit",status="202"}'), 2);
  assert.equal(moved('venue_http_requests_total{route="/api/v1/orders/submit",status="400"}'), 1);
  assert.equal(moved('venue_http_requests_total{route="/api/v1/orders/cancel",status="200"}'), 1);
  assert.equal(moved('venue_http_requests_total{route="/api/v1/data/availability",status="200"}'), 1);
  assert.equal(moved('venue_http_requests_total{route="/metrics",status="200"}'), 1, 'the first scrape, counted once answered');
  assert.equal(moved('venue_commands_total{route="submit",outcome="accepted"}'), submits + 1);
  assert.equal(moved('venue_commands_total{route="submit",outcome="replayed"}'), 1);
  assert.equal(moved('venue_commands_total{route="submit",outcome="invalid"}'), 1);
  assert.equal(moved('venue_commands_total{route="cancel",outcome="rejected"}'), 1);
  assert.equal(moved('venue_command_duration_seconds_count{route="submit",mode="sync-result"}'), submits);
  assert.equal(moved('venue_command_duration_seconds_count{route="submit",mode="captured-ack"}'), 2);
  assert.equal(moved('venue_command_duration_seconds_count{route="cancel",mode="sync-result"}'), 1);
  assert.equal(moved('venue_command_duration_seconds_bucket{route="submit",mode="sync-result",le="+Inf"}'), submits, 'the +Inf bucket holds every timed command');
  const sum = moved('venue_command_duration_seconds_sum{route="submit",mode="sync-result"}');
  assert.ok(sum > 0 && sum < 10 * submits, `${submits} durable submits took ${sum} s in all`);
});

test('journal commits are timed, and the queues show the commands they carried', async () => {
  await venue.order('/api/v1/orders/submit', submitBody({ instrumentId: crypto.randomUUID() }), { mode: 'sync-result' });
  const samples = await scrape(TOKENS.viewer);
  const commits = value(samples, 'venue_journal_commit_duration_seconds_count');
  assert.ok(commits > 0, 'a durable command needs a journal commit');
  assert.equal(value(samples, 'venue_journal_commit_duration_seconds_bucket{le="+Inf"}'), commits);
  assert.ok(value(samples, 'venue_journal_commit_duration_seconds_sum') > 0);
  const rings = [...samples].filter(([key]) => key.startsWith('venue_queue_high_water{queue="intake-ring-g'));
  assert.equal(rings.length, 2, 'one intake ring per gateway');
  assert.ok(
    rings.some(([, high]) => high >= 1),
    'the intake rings carried the commands',
  );
  assert.ok(value(samples, 'process_cpu_seconds_total') > 0);
});

test('venue_market_data_subscribers counts the stream sockets with a subscription, then none once they close', async () => {
  const gauge = async () => Number(/^venue_market_data_subscribers (\d+)$/m.exec((await venue.get('/metrics', TOKENS.operator)).text)?.[1]);
  const clients = await Promise.all([StreamClient.connect(venue.baseUrl, TOKENS.viewer), StreamClient.connect(venue.baseUrl, TOKENS.traderA)]);
  try {
    for (const client of clients) {
      client.subscribe('trades', crypto.randomUUID());
      await client.next((message) => message.type === 'subscribed');
    }
    assert.equal(await gauge(), 2);
  } finally {
    for (const client of clients) client.socket.close();
  }
  for (let waited = 0; (await gauge()) !== 0; waited += 50) {
    assert.ok(waited < 5000, 'the gauge did not fall to 0 after the sockets closed');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});
