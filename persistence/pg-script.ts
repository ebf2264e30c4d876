// One transaction in one round trip: a simple-query script (several statements, some
// of them `COPY ... FROM STDIN`) sent in one socket write together with the data of
// every COPY, in order. PostgreSQL runs the statements one by one and, on reaching
// each COPY, reads the CopyData/CopyDone that are already waiting on the socket; the
// client then reads one answer (CommandComplete per statement, ReadyForQuery).
// https://www.postgresql.org/docs/17/protocol-flow.html#PROTOCOL-COPY
//
// Why: each round trip to the server costs a wake-up of both sides, and on a 2-core
// machine under load each wake-up waits for a core. The journal writer's commit was
// four round trips (two COPYs, each a query and its data) and the projector's group
// about ten; each is now one.
//
// Atomicity: the statements of one simple query run as one implicit transaction,
// committed after the last one. A script therefore holds no BEGIN/COMMIT of its own
// (after an error inside an explicit block the session would stay in the aborted
// block). If a statement fails, the server answers ErrorResponse, discards the rest
// of the script and every CopyData/CopyDone still to come (protocol rule), rolls the
// implicit transaction back and sends ReadyForQuery: nothing of the script is
// stored and the connection stays usable.

import type pg from 'pg';

/** The part of node-postgres' connection a submitted query drives. */
interface Connection {
  stream: { cork(): void; uncork(): void };
  query(text: string): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
}

/** The largest CopyData message we send (the protocol allows up to 1 GB). */
const COPY_CHUNK_BYTES = 1 << 24;

/** A node-postgres "submittable": the client calls submit(), then the handle*() methods. */
class Script {
  readonly commandTags: string[] = [];
  readonly done: Promise<string[]>;
  private resolve!: (tags: string[]) => void;
  private reject!: (error: Error) => void;

  constructor(
    readonly text: string,
    private readonly copies: readonly Uint8Array[],
  ) {
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** node-postgres replaces this with its timeout hook when query_timeout is set. */
  callback(): void {}

  submit(connection: Connection): void {
    const socket = connection.stream;
    socket.cork();
    connection.query(this.text);
    for (const data of this.copies) {
      for (let at = 0; at < data.byteLength; at += COPY_CHUNK_BYTES) {
        const chunk = data.subarray(at, Math.min(data.byteLength, at + COPY_CHUNK_BYTES));
        connection.sendCopyFromChunk(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      }
      connection.endCopyFrom();
    }
    socket.uncork();
  }

  handleCopyInResponse(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handleCommandComplete(message: { text: string }): void {
    this.commandTags.push(message.text);
  }

  /** node-postgres clears the active query before this call; ReadyForQuery follows to the client. */
  handleError(error: Error): void {
    this.callback();
    this.reject(error);
  }

  handleReadyForQuery(): void {
    this.callback();
    this.resolve(this.commandTags);
  }
}

/**
 * Runs `sql` (statements separated by `;`, each `COPY ... FROM STDIN` taking the next
 * buffer of `copies`) in one round trip; resolves with the command tags.
 */
export function runScript(client: pg.ClientBase, sql: string, copies: readonly Uint8Array[] = []): Promise<string[]> {
  if (/\b(BEGIN|COMMIT|ROLLBACK|START\s+TRANSACTION)\b/i.test(sql)) throw new Error('a script is one implicit transaction: no BEGIN, COMMIT or ROLLBACK in it');
  const copyStatements = sql.match(/\bFROM\s+STDIN\b/gi)?.length ?? 0;
  if (copyStatements !== copies.length) throw new Error(`the script has ${copyStatements} COPY statements and ${copies.length} data buffers`);
  const script = new Script(sql, copies);
  client.query(script as unknown as pg.Submittable); // returns the script itself, not a promise: `done` settles it
  return script.done;
}
