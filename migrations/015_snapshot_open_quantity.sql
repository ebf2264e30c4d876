-- A top-of-book snapshot carries the instrument's remaining open displayed LIMIT quantity
-- per side (the specification's "remaining open LIMIT quantity for the instrument"),
-- beside the best levels. Bounded by the orders a shard holds times 10^9 units: bigint.
ALTER TABLE runtime.market_data_snapshots
  ADD COLUMN open_bid_quantity_units bigint NOT NULL DEFAULT 0 CHECK (open_bid_quantity_units >= 0),
  ADD COLUMN open_ask_quantity_units bigint NOT NULL DEFAULT 0 CHECK (open_ask_quantity_units >= 0);

-- Stored snapshots are refreshed here from the lifecycle projection as it stands, with the
-- projection position it shows, so every part of a row describes the same book (a default
-- beside best levels of an older refresh would not).
UPDATE runtime.market_data_snapshots s
   SET best_bid_price_nanos = b.p, best_bid_quantity_units = b.q,
       best_ask_price_nanos = a.p, best_ask_quantity_units = a.q,
       open_bid_quantity_units = n.bid_open, open_ask_quantity_units = n.ask_open,
       currency = i.currency,
       source_watermark = coalesce(w.sequence, 0),
       refreshed_at = clock_timestamp()
  FROM runtime.instruments i
  LEFT JOIN runtime.projection_watermarks w ON w.projection = 'runtime' AND w.shard_id = i.shard_id
  LEFT JOIN LATERAL (
    SELECT top.p, (SELECT sum(o.remaining_quantity_units) FROM runtime.order_lifecycle_state o
                    WHERE o.instrument_id = i.instrument_id AND o.side = 'BUY' AND o.limit_price_nanos = top.p
                      AND o.state IN ('OPEN', 'PARTIALLY_FILLED') AND o.order_type = 'LIMIT') AS q
      FROM (SELECT o.limit_price_nanos AS p FROM runtime.order_lifecycle_state o
             WHERE o.instrument_id = i.instrument_id AND o.side = 'BUY' AND o.state IN ('OPEN', 'PARTIALLY_FILLED') AND o.order_type = 'LIMIT'
             ORDER BY o.limit_price_nanos DESC LIMIT 1) top
  ) b ON true
  LEFT JOIN LATERAL (
    SELECT top.p, (SELECT sum(o.remaining_quantity_units) FROM runtime.order_lifecycle_state o
                    WHERE o.instrument_id = i.instrument_id AND o.side = 'SELL' AND o.limit_price_nanos = top.p
                      AND o.state IN ('OPEN', 'PARTIALLY_FILLED') AND o.order_type = 'LIMIT') AS q
      FROM (SELECT o.limit_price_nanos AS p FROM runtime.order_lifecycle_state o
             WHERE o.instrument_id = i.instrument_id AND o.side = 'SELL' AND o.state IN ('OPEN', 'PARTIALLY_FILLED') AND o.order_type = 'LIMIT'
             ORDER BY o.limit_price_nanos ASC LIMIT 1) top
  ) a ON true
  CROSS JOIN LATERAL (
    SELECT coalesce(sum(o.remaining_quantity_units) FILTER (WHERE o.side = 'BUY'), 0)::bigint AS bid_open,
           coalesce(sum(o.remaining_quantity_units) FILTER (WHERE o.side = 'SELL'), 0)::bigint AS ask_open
      FROM runtime.order_lifecycle_state o
     WHERE o.instrument_id = i.instrument_id AND o.state IN ('OPEN', 'PARTIALLY_FILLED') AND o.order_type = 'LIMIT'
  ) n
 WHERE i.instrument_id = s.instrument_id;
