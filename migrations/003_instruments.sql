-- Every instrument the venue has accepted an order for, with its currency and shard:
-- market-data reads tell "unknown instrument" (404) from "empty book" with it, without
-- scanning the order tables. Written by the projector in the transaction that
-- materializes the instrument's first order.
CREATE TABLE runtime.instruments (
  instrument_id uuid PRIMARY KEY,
  currency char(3) NOT NULL,
  shard_id smallint NOT NULL CHECK (shard_id >= 0),
  first_sequence bigint NOT NULL CHECK (first_sequence > 0)
);
