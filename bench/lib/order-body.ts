// The benchmarks' plain order: trader A's, alternating sides around a mid of 100 and
// crossing about half the time, on the i-th of the given instruments.

export const BENCH_PARTICIPANT = 'a1000000-0000-4000-8000-000000000001';
export const BENCH_ACCOUNT = 'a2000000-0000-4000-8000-000000000001';

/** The i-th order's JSON body; `clientOrderId`, when given, is added. */
export function crossingOrderBody(i: number, instruments: readonly string[], clientOrderId?: string): string {
  const buy = i % 2 === 0;
  const offset = (i * 7919) % 7; // 0..6
  return JSON.stringify({
    commandId: crypto.randomUUID(),
    traceId: crypto.randomUUID(),
    causationId: crypto.randomUUID(),
    correlationId: crypto.randomUUID(),
    actorId: 'bench',
    occurredAt: '2026-11-22T00:00:00Z',
    orderId: crypto.randomUUID(),
    instrumentId: instruments[i % instruments.length],
    participantId: BENCH_PARTICIPANT,
    accountId: BENCH_ACCOUNT,
    side: buy ? 'BUY' : 'SELL',
    orderType: 'LIMIT',
    quantityUnits: String(1 + (i % 5)),
    limitPrice: String(buy ? 97 + offset : 103 - offset),
    currency: 'USD',
    timeInForce: 'DAY',
    ...(clientOrderId === undefined ? {} : { clientOrderId }),
  });
}
