-- Snapshot refreshes read the books in memory (persistence/market-data.ts refreshSnapshots),
-- so no read needs the open-orders index any more; the start's loads scan the table once.
-- Without it no index covers a column an order's update changes (state, quantities,
-- updated_at), and with room left on each page (fillfactor) PostgreSQL can update the row
-- in place (a HOT update: no index entry at all) (docs/decisions/0039).
DROP INDEX runtime.order_lifecycle_open;
ALTER TABLE runtime.order_lifecycle_state SET (fillfactor = 80);
