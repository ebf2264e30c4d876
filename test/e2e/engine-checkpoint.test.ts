// Checkpoints of the shards' engines while running (persistence/engine-checkpoints.ts):
// a start after a kill -9 loads each shard's last checkpoint the database names and
// replays only the journal after it, with the same books as a replay of the whole
// journal; a checkpoint is named only once its journal is durable; a damaged one costs
// that shard a whole replay, nothing else.

import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { SeededRandom } from '../../bench/lib/seeded-random.ts';
import { shardOf } from '../../core/shard-map.ts';
import { uuidWords } from '../../core/uuid.ts';
import { checkpointPath, readCheckpointNotes } from '../../persistence/engine-checkpoints.ts';
import {
  assertBooksEqualReplay,
  assertJournalAndTrades,
  assertTerminalWithOriginalAnswer,
  INSTRUMENTS,
  isAcknowledged,
  mixedCommand,
  sendUntilKilled,
  SHARDS,
  sweepAgainstReplay,
  type Sent,
} from '../support/crash-checks.ts';
import { withClient } from '../support/database.ts';
import { committedHistory } from '../support/journal.ts';
import { dataDirs, storageUrl, submitBody, TOKENS, stopAfter, VenueProcess } from '../support/venue-process.ts';

const dataDir = dataDirs();

const booksLine = (log: string): string[] => JSON.parse(/"books":(\[[^\]]*\])[^\n]*order books restored/.exec(log)?.[1] ?? 'null') as string[];
const replayedOf = (log: string): number => Number(/"replayed":(\d+)[^\n]*order books restored/.exec(log)?.[1] ?? -1);

test('after a kill -9 each shard loads its last checkpoint and replays only the journal after it; a damaged checkpoint costs that shard a whole replay', async (t) => {
  const dir = dataDir();
  const env = { DATA_DIR: dir, PROCESSING_MODE: 'sync-result', ENGINE_CHECKPOINT_COMMANDS: '60' };
  let venue = await VenueProcess.start(env);
  const session = (await venue.get('/api/v1/venue/session', TOKENS.traderA)).json;
  const random = new SeededRandom(4242);
  const sent: Sent[] = [];
  for (let i = 0; i < 900; i++) sent.push(mixedCommand(random, sent, session));
  const burst = await sendUntilKilled(venue, sent, { concurrency: 16, killAfterAnswers: 700 });
  assert.ok(burst.killedMidLoad, 'killed during the burst');
  const noted = (venue.log.match(/engine checkpoint noted/g) ?? []).length;
  t.diagnostic(`checkpoints noted before the kill: ${noted}`);
  assert.ok(noted >= 4, `checkpoints were noted while the load ran (${noted})`);

  const check = async (expectBooks: (books: string[], notes: Awaited<ReturnType<typeof readCheckpointNotes>>, journalCommands: number) => void) => {
    venue = await VenueProcess.start(env);
    const url = await storageUrl(dir);
    const notes = await withClient(url, (client) => readCheckpointNotes(client, SHARDS));
    assert.equal((await venue.get('/readyz')).status, 200);
    const acknowledged = sent.filter(isAcknowledged);
    await assertTerminalWithOriginalAnswer(venue, acknowledged);
    await venue.untilProjected();
    await withClient(url, async (client) => {
      const { history } = await assertJournalAndTrades(client, acknowledged);
      expectBooks(
        booksLine(venue.log),
        notes,
        history.reduce((sum, commands) => sum + commands.length, 0),
      );
      await assertBooksEqualReplay(client, venue, history);
    });
    return notes;
  };

  // 1. Both shards from their checkpoints: the replay is the journal's tail only.
  const notes = await check((books, notes, journalCommands) => {
    for (let shard = 0; shard < SHARDS; shard++) {
      const note = notes[shard];
      assert.ok(note !== null && note !== undefined, `shard ${shard} has a checkpoint noted`);
      assert.match(books[shard]!, new RegExp(`^checkpoint at ${note.sequence}, then the journal to \\d+$`), `shard ${shard}: ${books[shard]}`);
    }
    const replayed = replayedOf(venue.log);
    t.diagnostic(`journal ${journalCommands} commands, replayed after the checkpoints ${replayed}`);
    assert.ok(replayed >= 0 && replayed < journalCommands / 2, `only the tail was replayed (${replayed} of ${journalCommands})`);
  });

  // The order of the resting books is the replay's, so matching against them is too: more load
  // (which takes new checkpoints), then a second kill, with shard 1's named checkpoint damaged.
  const more: Sent[] = [];
  for (let i = 0; i < 300; i++) more.push(mixedCommand(random, [...sent, ...more], session));
  const url = await storageUrl(dir);
  await sendUntilKilled(venue, more, { concurrency: 16, killAfterAnswers: 250 });
  sent.push(...more);
  const named = await withClient(url, (client) => readCheckpointNotes(client, SHARDS));
  assert.ok(
    named.every((note, shard) => note !== null && note.sequence > notes[shard]!.sequence),
    'new checkpoints were noted after the restart',
  );
  const file = checkpointPath(dir, 1, named[1]!.slot);
  const bytes = readFileSync(file);
  bytes[bytes.length - 100]! ^= 0x01;
  writeFileSync(file, bytes);
  await check((books, notes) => {
    assert.match(books[0]!, new RegExp(`^checkpoint at ${notes[0]!.sequence}, then`));
    assert.equal(books[1], 'replayed (a checksum mismatch)');
  });
  await stopAfter(
    () => venue,
    async () => {
      // The engines (not only the projections) hold the replayed books: IOCs sweep them in the replay's order.
      await withClient(await storageUrl(dir), async (client) => {
        const history = await committedHistory(client, SHARDS);
        const { engines } = await assertBooksEqualReplay(client, venue, history);
        await sweepAgainstReplay(venue, engines);
      });
    },
  );
});

test('a checkpoint is named only once its journal is durable; a crash before that starts from the one named before it', async () => {
  const dir = dataDir();
  const env = { DATA_DIR: dir, PROCESSING_MODE: 'sync-result', ENGINE_CHECKPOINT_COMMANDS: '40' };
  let venue = await VenueProcess.start(env);
  const url = await storageUrl(dir);
  const instrumentId = INSTRUMENTS.find((id) => shardOf(uuidWords(id), 0, SHARDS) === 0)!;
  const bids = (count: number, from: number) => Array.from({ length: count }, (_, k) => submitBody({ instrumentId, side: 'BUY', price: String(10 + ((from + k) % 30)), quantity: '1' }));
  await stopAfter(
    () => venue,
    async () => {
      // Some durable commands and a first checkpoint of shard 0.
      for (const body of bids(50, 0)) assert.equal((await venue.order('/api/v1/orders/submit', body, { mode: 'sync-result' })).status, 200);
      const first = await until(async () => (await withClient(url, (client) => readCheckpointNotes(client, SHARDS)))[0], 'a first checkpoint');
      const fileOf = (slot: number) => checkpointPath(dir, 0, slot);
      const nextSlot = first.slot === 0 ? 1 : 0;
      const before = statOrNull(fileOf(nextSlot));

      await withClient(url, async (locker) => {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE runtime.journal_batches IN ACCESS EXCLUSIVE MODE');
        // Matched, not durable: the journal cannot be written while the lock holds (their answers wait for it, then 503).
        const pending = bids(60, 50).map((body) => venue.order('/api/v1/orders/submit', body, { mode: 'sync-result' }).catch(() => null));
        await until(async () => {
          const now = statOrNull(fileOf(nextSlot));
          return now !== null && (before === null || now.mtimeMs > before.mtimeMs) ? now : null;
        }, 'the next checkpoint written to the other file');
        await new Promise((resolve) => setTimeout(resolve, 500));
        const noted = (await withClient(url, (client) => readCheckpointNotes(client, SHARDS)))[0]!;
        assert.deepEqual(noted, first, 'the checkpoint past the durable journal is not named');
        await venue.kill();
        await Promise.all(pending);
        await locker.query('ROLLBACK');
      });

      venue = await VenueProcess.start(env);
      const books = booksLine(venue.log);
      assert.equal(books[0], `checkpoint at ${first.sequence}, then the journal to ${/"journalDurable":\[(\d+)/.exec(venue.log)?.[1]}`, 'the named checkpoint, not the newer file');
      await venue.untilProjected();
      await withClient(await storageUrl(dir), async (client) => {
        const history = await committedHistory(client, SHARDS);
        const { engines, resting } = await assertBooksEqualReplay(client, venue, history);
        assert.ok(resting >= 50, `the durable bids rest (${resting})`);
        await sweepAgainstReplay(venue, engines);
      });
    },
  );
});

test("the commands a start replays count toward the next checkpoint; a graceful stop's saved engine becomes the checkpoint a crash starts from", async (t) => {
  // Counted from the start instead, a venue restarted more often than every
  // ENGINE_CHECKPOINT_COMMANDS commands never took a checkpoint again, and each crash replayed
  // more than the one before. Shard 0 only, one command per batch (sequential sync-result bids),
  // so each checkpoint comes exactly every 100 commands of its journal.
  const dir = dataDir();
  const env = { DATA_DIR: dir, PROCESSING_MODE: 'sync-result', ENGINE_CHECKPOINT_COMMANDS: '100' };
  let venue = await VenueProcess.start(env);
  const instrumentId = INSTRUMENTS.find((id) => shardOf(uuidWords(id), 0, SHARDS) === 0)!;
  let sentBids = 0;
  const bid = async (count: number) => {
    for (let k = 0; k < count; k++, sentBids++) {
      const body = submitBody({ instrumentId, side: 'BUY', price: String(10 + (sentBids % 30)), quantity: '1' });
      assert.equal((await venue.order('/api/v1/orders/submit', body, { mode: 'sync-result' })).status, 200);
    }
  };
  const namedAt = async (sequence: number, what: string) => {
    const url = await storageUrl(dir); // the venue's PostgreSQL, on a new port after each start
    const note = await until(
      async () => {
        const named = (await withClient(url, (client) => readCheckpointNotes(client, SHARDS)))[0];
        return named !== null && named !== undefined && named.sequence >= sequence ? named : null;
      },
      `${what}: shard 0's checkpoint at ${sequence}`,
      15_000,
    );
    assert.equal(note.sequence, sequence, what);
  };

  await stopAfter(
    () => venue,
    async () => {
      await bid(150);
      await namedAt(100, 'the first 150 commands');
      await venue.kill();
      venue = await VenueProcess.start(env); // replays 101-150 after the checkpoint at 100
      assert.equal(booksLine(venue.log)[0], 'checkpoint at 100, then the journal to 150');
      await bid(60); // 110 commands since the named checkpoint, 60 of them since the start
      await namedAt(200, 'after a crash, 50 replayed and 60 new commands');
      await bid(30);
      assert.equal(await venue.stop(), 0); // the engine saved at 240 (the folder is the test's: kept); the named checkpoint is at 200
      venue = await VenueProcess.start(env);
      assert.equal(booksLine(venue.log)[0], 'saved at the last stop');
      // The saved engine is the checkpoint now: a crash replays only what came after the stop.
      await namedAt(240, 'the engine saved at the stop, named once the start loaded it');
      await bid(70); // 70 since the stop: no checkpoint yet
      await venue.kill();
      venue = await VenueProcess.start(env);
      assert.equal(booksLine(venue.log)[0], 'checkpoint at 240, then the journal to 310');
      await bid(30);
      await namedAt(340, 'after a graceful stop and a crash, 70 replayed and 30 new commands');
      t.diagnostic(`bids sent: ${sentBids}`);
    },
  );
});

function statOrNull(file: string) {
  try {
    return statSync(file);
  } catch {
    return null;
  }
}

async function until<T>(probe: () => Promise<T | null | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
