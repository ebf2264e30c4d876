// The projector's open orders as a graceful stop saves them, and the open rows of
// order_lifecycle_state, as comparable lines: a test of a start's open orders compares
// the two after a stop (persistence/open-orders-snapshot.ts).

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { formatUuid } from '../../core/uuid.ts';
import { readOpenOrders } from '../../persistence/open-orders-snapshot.ts';
import type { RestingOrder } from '../../persistence/resting-orders.ts';
import { withClient } from './database.ts';

const STATES = ['', 'OPEN', 'PARTIALLY_FILLED'];

/** The log line of a start that loaded the open orders' checkpoint and replayed the journal after it. */
export const OPEN_ORDERS_LINE = /"openOrders":"checkpoint at ([\d,]+), then (\d+) commands of the journal after it \((\d+) changes of orders\)"/;

/** The open orders a graceful stop saved from the projector: id, state, price, quantity, filled. */
export function savedOpenOrders(dir: string): string[] {
  const file = path.join(dir, 'open-orders.bin');
  const bytes = readFileSync(file);
  const header = JSON.parse(bytes.toString('utf8', 8, 8 + bytes.readUInt32LE(4))) as { token: string; watermarks: number[] };
  const rows: string[] = [];
  const read = readOpenOrders(file, header.token, header.watermarks);
  assert.ok(typeof read !== 'string', `the graceful stop saved the open orders (${String(read)})`);
  read.forEach((order: RestingOrder) => {
    rows.push(`${formatUuid(order.ids, 0)} ${STATES[order.state]} ${order.priceNanos} ${order.quantity} ${order.filled}`);
  });
  return rows.sort();
}

/** The open rows of order_lifecycle_state, in savedOpenOrders' form. */
export async function tableOpenOrders(url: string): Promise<string[]> {
  const rows = await withClient(url, (client) =>
    client.query<{ line: string }>(
      `SELECT order_id || ' ' || state || ' ' || limit_price_nanos || ' ' || original_quantity_units || ' ' || filled_quantity_units AS line
         FROM runtime.order_lifecycle_state WHERE state IN ('OPEN', 'PARTIALLY_FILLED')`,
    ),
  );
  return rows.rows.map((row) => row.line).sort();
}
