-- The venue's runtime storage. Two tiers (ARCHITECTURE.md, "Two tiers of storage"):
--   1. what an acknowledgement waits for: command_log (one narrow row per command taken
--      by a gateway) and journal_batches (one row per shard batch: the commands and
--      the events they produced, encoded);
--   2. projections materialized right behind the journal, each with a watermark:
--      command_outcomes, executions, trades, order_lifecycle_state.

CREATE SCHEMA IF NOT EXISTS runtime;

-- Settings a restart must not change (they decide where instruments live and what
-- a replay of the journal produces).
CREATE TABLE runtime.venue_settings (
  name text PRIMARY KEY,
  value text NOT NULL
);

CREATE TABLE runtime.venue_sessions (
  run_no integer NOT NULL CHECK (run_no > 0),
  session_no integer NOT NULL CHECK (session_no > 0),
  run_id text NOT NULL CHECK (run_id ~ '^[A-Za-z0-9._:-]{1,64}$'),
  venue_session_id text NOT NULL CHECK (venue_session_id ~ '^[A-Za-z0-9._:-]{1,64}$'),
  started_at timestamptz NOT NULL,
  ended_at timestamptz,
  PRIMARY KEY (run_no, session_no),
  UNIQUE (run_id, venue_session_id)
);

-- Intake: every command a gateway took, with what idempotency and status need, and
-- the 128-byte command slot it sent to its shard (for re-driving after a crash).
CREATE TABLE runtime.command_log (
  command_id uuid PRIMARY KEY,
  scope_digest bytea NOT NULL UNIQUE CHECK (length(scope_digest) = 16),
  payload_hash bytea NOT NULL CHECK (length(payload_hash) = 32),
  principal_id text NOT NULL,
  client_id text NOT NULL CHECK (length(client_id) BETWEEN 1 AND 128),
  idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 128),
  route smallint NOT NULL CHECK (route BETWEEN 0 AND 3),
  processing_mode smallint NOT NULL CHECK (processing_mode BETWEEN 0 AND 3),
  shard_id smallint NOT NULL CHECK (shard_id >= 0),
  order_id uuid,
  instrument_id uuid,
  client_order_id text CHECK (length(client_order_id) BETWEEN 1 AND 64),
  slot bytea NOT NULL CHECK (length(slot) = 128),
  received_at timestamptz NOT NULL
);
CREATE INDEX command_log_received_at ON runtime.command_log (received_at);

-- The canonical journal: one row per shard batch. payload = for each command, its
-- 128-byte slot (as sequenced), its result header and event records (64 bytes each).
-- The database holds a gap-free prefix of every shard stream.
CREATE TABLE runtime.journal_batches (
  shard_id smallint NOT NULL CHECK (shard_id >= 0),
  first_sequence bigint NOT NULL CHECK (first_sequence > 0),
  last_sequence bigint NOT NULL,
  command_count integer NOT NULL CHECK (command_count > 0),
  event_count integer NOT NULL,
  checksum bigint NOT NULL,
  payload bytea NOT NULL,
  committed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (shard_id, first_sequence),
  CHECK (last_sequence - first_sequence + 1 = event_count),
  CHECK (event_count >= command_count)
);

-- How far each projection has materialized the journal, per shard.
CREATE TABLE runtime.projection_watermarks (
  projection text NOT NULL,
  shard_id smallint NOT NULL CHECK (shard_id >= 0),
  sequence bigint NOT NULL CHECK (sequence >= 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (projection, shard_id)
);

-- Projection: the outcome of every command on the journal, and its rendered envelope.
CREATE TABLE runtime.command_outcomes (
  command_id uuid PRIMARY KEY,
  shard_id smallint NOT NULL CHECK (shard_id >= 0),
  stream_sequence bigint NOT NULL CHECK (stream_sequence > 0),
  batch_first_sequence bigint NOT NULL,
  shard_batch bigint NOT NULL CHECK (shard_batch > 0),
  result_status smallint NOT NULL CHECK (result_status IN (1, 2)),
  reject_code text,
  order_id uuid,
  occurred_at timestamptz NOT NULL,
  result_payload_json text NOT NULL,
  UNIQUE (shard_id, stream_sequence)
);

CREATE TABLE runtime.executions (
  execution_id uuid PRIMARY KEY,
  shard_id smallint NOT NULL CHECK (shard_id >= 0),
  stream_sequence bigint NOT NULL CHECK (stream_sequence > 0),
  command_id uuid NOT NULL,
  trade_id uuid NOT NULL,
  order_id uuid NOT NULL,
  counterparty_order_id uuid NOT NULL,
  instrument_id uuid NOT NULL,
  participant_id uuid NOT NULL,
  account_id uuid NOT NULL,
  side text NOT NULL CHECK (side IN ('BUY', 'SELL')),
  liquidity text NOT NULL CHECK (liquidity IN ('TAKER', 'MAKER')),
  quantity_units bigint NOT NULL CHECK (quantity_units > 0),
  price_nanos bigint NOT NULL CHECK (price_nanos > 0),
  currency char(3) NOT NULL,
  occurred_at timestamptz NOT NULL,
  UNIQUE (shard_id, stream_sequence)
);
CREATE INDEX executions_order ON runtime.executions (order_id);
CREATE INDEX executions_participant ON runtime.executions (participant_id, instrument_id, occurred_at);

CREATE TABLE runtime.trades (
  trade_id uuid PRIMARY KEY,
  shard_id smallint NOT NULL CHECK (shard_id >= 0),
  stream_sequence bigint NOT NULL CHECK (stream_sequence > 0),
  tape_sequence bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  command_id uuid NOT NULL,
  execution_id uuid NOT NULL,
  run_id text NOT NULL,
  venue_session_id text NOT NULL,
  instrument_id uuid NOT NULL,
  buy_order_id uuid NOT NULL,
  sell_order_id uuid NOT NULL,
  buy_participant_id uuid NOT NULL,
  buy_account_id uuid NOT NULL,
  sell_participant_id uuid NOT NULL,
  sell_account_id uuid NOT NULL,
  aggressor_side text NOT NULL CHECK (aggressor_side IN ('BUY', 'SELL')),
  quantity_units bigint NOT NULL CHECK (quantity_units > 0),
  price_nanos bigint NOT NULL CHECK (price_nanos > 0),
  currency char(3) NOT NULL,
  occurred_at timestamptz NOT NULL,
  UNIQUE (shard_id, stream_sequence),
  CHECK (buy_order_id <> sell_order_id)
);
CREATE INDEX trades_instrument ON runtime.trades (instrument_id, tape_sequence);
CREATE INDEX trades_run ON runtime.trades (run_id);

-- Projection: the current state of every order (open, partially filled, filled,
-- cancelled, expired), kept up to date from the journal and rebuildable from it.
CREATE TABLE runtime.order_lifecycle_state (
  order_id uuid PRIMARY KEY,
  client_order_id text,
  run_id text NOT NULL,
  venue_session_id text NOT NULL,
  instrument_id uuid NOT NULL,
  participant_id uuid NOT NULL,
  account_id uuid NOT NULL,
  side text NOT NULL CHECK (side IN ('BUY', 'SELL')),
  order_type text NOT NULL CHECK (order_type IN ('LIMIT', 'LIMIT_HIDDEN')),
  time_in_force text NOT NULL CHECK (time_in_force IN ('DAY', 'IOC')),
  state text NOT NULL CHECK (state IN ('OPEN', 'PARTIALLY_FILLED', 'FILLED', 'CANCELLED', 'EXPIRED')),
  limit_price_nanos bigint NOT NULL CHECK (limit_price_nanos > 0),
  currency char(3) NOT NULL,
  original_quantity_units bigint NOT NULL CHECK (original_quantity_units > 0),
  remaining_quantity_units bigint NOT NULL CHECK (remaining_quantity_units >= 0),
  filled_quantity_units bigint NOT NULL CHECK (filled_quantity_units >= 0),
  engine_order_id text NOT NULL,
  shard_id smallint NOT NULL CHECK (shard_id >= 0),
  last_sequence bigint NOT NULL CHECK (last_sequence > 0),
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CHECK (filled_quantity_units <= original_quantity_units)
);
CREATE INDEX order_lifecycle_participant ON runtime.order_lifecycle_state (participant_id, state, instrument_id);
CREATE INDEX order_lifecycle_open ON runtime.order_lifecycle_state (instrument_id, side, limit_price_nanos) WHERE state IN ('OPEN', 'PARTIALLY_FILLED');

-- Top-of-book snapshots (the market-data issue refreshes them).
CREATE TABLE runtime.market_data_snapshots (
  instrument_id uuid NOT NULL,
  projection_name text NOT NULL,
  best_bid_price_nanos bigint CHECK (best_bid_price_nanos > 0),
  best_bid_quantity_units bigint CHECK (best_bid_quantity_units > 0),
  best_ask_price_nanos bigint CHECK (best_ask_price_nanos > 0),
  best_ask_quantity_units bigint CHECK (best_ask_quantity_units > 0),
  currency char(3),
  source_watermark bigint NOT NULL CHECK (source_watermark >= 0),
  refreshed_at timestamptz NOT NULL,
  PRIMARY KEY (instrument_id, projection_name)
);
