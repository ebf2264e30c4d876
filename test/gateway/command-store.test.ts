import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { commandStoreBytes, CommandStore, RESULT, STATUS } from '../../gateway/command-store.ts';
import { uuidWords } from '../../core/uuid.ts';
import { faultPages } from '../../runtime/prefault.ts';

function store(records: number, arenaBytes: number): CommandStore {
  return new CommandStore(new SharedArrayBuffer(commandStoreBytes(records, arenaBytes)), records);
}

function create(s: CommandStore, commandId = crypto.randomUUID()): { index: number; commandId: string } {
  const index = s.create({ mode: 0, route: 0, principal: 3, payloadHash: new Uint8Array(32).fill(7), clientId: 'désk', idempotencyKey: 'key-1', receivedAtUs: 1 }, commandId, null, null);
  return { index, commandId };
}

test('a record reads back what was written, text and bodies included', () => {
  const s = store(16, 64 * 1024);
  const { index, commandId } = create(s);
  const orderId = crypto.randomUUID();
  const instrumentId = crypto.randomUUID();
  s.setQueued(index, 1, 42, 77, uuidWords(orderId), uuidWords(instrumentId));
  s.setResult(index, { accepted: true, rejectCode: 0, streamSequence: 9, batch: 3, completedAtUs: 5, envelope: `{"outcome":1}` });
  s.setResponseToResult(index, 200);
  const snapshot = s.read(index, uuidWords(commandId))!;
  assert.equal(snapshot.commandId, commandId);
  assert.equal(snapshot.orderId, orderId);
  assert.equal(snapshot.instrumentId, instrumentId, 'learned when queued (a cancel by clientOrderId)');
  assert.equal(snapshot.intakeCount, 77);
  assert.deepEqual([snapshot.clientId, snapshot.idempotencyKey], ['désk', 'key-1']);
  assert.deepEqual([snapshot.status, snapshot.resultStatus, snapshot.shard, snapshot.ringIndex, snapshot.streamSequence], [STATUS.COMPLETED, RESULT.ACCEPTED, 1, 42, 9]);
  assert.equal(snapshot.responseStatus, 200);
  assert.equal(Buffer.from(snapshot.response!).toString(), '{"outcome":1}');
  assert.equal(Buffer.from(snapshot.result!).toString(), '{"outcome":1}');
  assert.equal(snapshot.payloadHash, '07'.repeat(32));
});

test('a reused record is not mistaken for the command that held it before', () => {
  const s = store(16, 64 * 1024);
  const first = create(s);
  for (let n = 0; n < 16; n++) create(s); // wraps all the way round
  assert.equal(s.read(first.index, uuidWords(first.commandId)), null);
});

test('a voided record reads as absent', () => {
  const s = store(16, 64 * 1024);
  const { index, commandId } = create(s);
  s.void(index);
  assert.equal(s.read(index, uuidWords(commandId)), null);
});

test('a body overwritten by newer ones reads as gone, never as the bytes of another', () => {
  const s = store(1024, 64 * 1024);
  const old = create(s);
  s.setResponse(old.index, 202, `{"old":"${'x'.repeat(500)}"}`);
  for (let n = 0; n < 200; n++) s.setResponse(create(s).index, 202, `{"n":${n},"pad":"${'y'.repeat(500)}"}`);
  const snapshot = s.read(old.index, uuidWords(old.commandId))!;
  assert.equal(snapshot.response, null, 'the arena wrapped past it');
  assert.equal(snapshot.responseStatus, 202);
});

test('bodies of every size and mix of UTF-8 widths, round and round a small arena, read back byte for byte while among the newest', () => {
  const arenaBytes = 4096;
  const s = store(1024, arenaBytes);
  const pieces = ['a', '{"k":1}', 'é', '€', '😀', '\ud800', 'x'.repeat(37)];
  let seed = 7;
  const next = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  const written: { index: number; commandId: string; bytes: Buffer }[] = [];
  let checked = 0;
  for (let n = 0; n < 3000; n++) {
    let text = '';
    const parts = next(5) === 0 ? 0 : next(60);
    for (let p = 0; p < parts; p++) text += pieces[next(pieces.length)];
    const command = create(s);
    s.setResponse(command.index, 200, text);
    written.push({ ...command, bytes: Buffer.from(text, 'utf8') });
    // The newest bodies whose bytes (rounded to 8, plus at most one skip to the start) fit in the arena are all intact.
    let budget = arenaBytes / 2;
    for (let k = written.length - 1; k >= Math.max(0, written.length - 1024); k--) {
      const entry = written[k]!;
      const snapshot = s.read(entry.index, uuidWords(entry.commandId));
      if (snapshot === null) break; // its record was reused
      budget -= Math.max(8, Math.ceil(entry.bytes.length / 8) * 8);
      if (snapshot.response === null) {
        assert.ok(budget < 0, `body ${k} of ${written.length} gone while ${budget} bytes of the arena's newest half remain`);
        break;
      }
      assert.deepEqual(Buffer.from(snapshot.response), entry.bytes, `body ${k} of ${written.length}`);
      checked++;
    }
  }
  assert.ok(checked > 20_000, `${checked} bodies checked`);
  // A body as large as the arena fits; a byte more is refused.
  s.setResponse(create(s).index, 200, 'z'.repeat(arenaBytes));
  assert.throws(() => s.setResponse(create(s).index, 200, 'z'.repeat(arenaBytes + 1)), /exceeds the arena/);
});

/**
 * The resident bytes of each of this process's mappings, by start address (Linux,
 * /proc/self/smaps). The whole process's resident set is not a fair measure of one
 * buffer: the garbage collector returns and takes pages meanwhile (one run saw the
 * process grow by 94.5% of an 80 MiB store that prefault had wholly mapped in).
 */
function residentByMapping(): Map<string, number> {
  const resident = new Map<string, number>();
  let start = '';
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const range = /^([0-9a-f]+)-[0-9a-f]+ /.exec(line);
    if (range !== null) start = range[1]!;
    else if (line.startsWith('Rss:')) resident.set(start, Number(line.split(/\s+/)[1]) * 1024);
  }
  return resident;
}

test('faulting a store in (the main thread does, after ready: runtime/prefault.ts) maps every page of a fresh store and changes nothing in a used one', () => {
  // A fresh 80 MiB store: its pages are not resident until something writes them.
  const bytes = commandStoreBytes(1 << 16, 64 * 1024 * 1024);
  const fresh = new SharedArrayBuffer(bytes);
  new CommandStore(fresh, 1 << 16);
  const before = residentByMapping();
  faultPages(new Int32Array(fresh));
  // The store lies in one mapping (its own, or one the kernel merged it into): that mapping grew by the store.
  const grown = Math.max(...[...residentByMapping()].map(([start, bytesNow]) => bytesNow - (before.get(start) ?? 0)));
  assert.ok(grown >= bytes * 0.95, `the largest growth of one mapping was ${grown} bytes, of the store's ${bytes}`);

  // A used store: records and bodies everywhere, the counters in the first page.
  const buffer = new SharedArrayBuffer(commandStoreBytes(1024, 64 * 1024));
  const s = new CommandStore(buffer, 1024);
  const made: { index: number; commandId: string; body: string }[] = [];
  for (let n = 0; n < 700; n++) {
    const command = create(s);
    const body = `{"n":${n},"pad":"${'q'.repeat(n % 90)}"}`;
    s.setResponse(command.index, 201, body);
    made.push({ ...command, body });
  }
  const readAll = () => made.map(({ index, commandId }) => s.read(index, uuidWords(commandId)));
  const snapshots = readAll();
  assert.ok(snapshots.filter((snapshot) => snapshot?.response != null).length > 300, 'many bodies still held');
  faultPages(new Int32Array(buffer));
  assert.deepEqual(readAll(), snapshots);
  // The record counter (word 0) and the arena head (word 1) carried on: the next record follows the last.
  assert.equal(create(s).index, 700);
});
