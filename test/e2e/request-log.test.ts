// What an operator follows in the log: a 5xx body quotes a request id, and the log line
// of its cause carries that id and the error serialized by the one serializer
// (core/log-format.ts), stack included, though the error was met in another thread.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { isUuid } from '../../core/uuid.ts';
import { withClient } from '../support/database.ts';
import { storageUrl, TOKENS, VenueProcess } from '../support/venue-process.ts';

const INSTRUMENT = crypto.randomUUID();
let venue: VenueProcess;

before(async () => {
  venue = await VenueProcess.start();
});
after(async () => {
  assert.equal(await venue.stop(), 0);
});

test("the log line of a 5xx cause carries the body's requestId and the driver's error as type, message, code and stack", async () => {
  const url = await storageUrl(venue.dataDir);
  // The read thread meets a PostgreSQL error of its own: the table is renamed under the running venue.
  await withClient(url, (client) => client.query('ALTER TABLE runtime.trades RENAME TO trades_away'));
  let answer;
  try {
    answer = await venue.get(`/api/v1/market-data/bars/${INSTRUMENT}`, TOKENS.viewer);
  } finally {
    await withClient(url, (client) => client.query('ALTER TABLE runtime.trades_away RENAME TO trades'));
  }
  assert.equal(answer.status, 503, answer.text);
  const { requestId } = answer.json;
  assert.ok(isUuid(requestId), answer.text);
  await venue.untilLogged(new RegExp(`"requestId":"${requestId}"`));
  const lines = venue.log.split('\n').filter((line) => line.includes(requestId));
  assert.equal(lines.length, 1, lines.join('\n'));
  const line = JSON.parse(lines[0]!);
  assert.equal(line.requestId, requestId);
  assert.equal(line.level, 50, 'logged as an error');
  assert.match(line.thread, /^gateway-\d+$/, 'logged by the gateway that answered');
  assert.equal(line.msg, answer.json.error, 'the message of the body');
  assert.equal(line.err.type, 'DatabaseError');
  assert.match(line.err.message, /relation "runtime\.trades" does not exist/);
  assert.equal(line.err.code, '42P01', "PostgreSQL's SQLSTATE");
  assert.match(line.err.stack, /does not exist\n\s+at /, 'the stack, from the read thread');
  assert.doesNotMatch(answer.text, /does not exist|runtime\.trades/, 'none of it in the body');
});
