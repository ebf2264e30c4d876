-- Rows storage refused (persistence/quarantine.ts). A projection row PostgreSQL still
-- refuses (the edge keeps out what it cannot hold) is kept here with its journal position
-- and the server's reason, in the transaction of the group it was cut from; the rows behind
-- it go on. `data` is the row in binary COPY form, or a whole COPY's data when the group
-- was quarantined whole (target '<table> (whole group)').
CREATE TABLE runtime.quarantined_rows (
  quarantine_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  quarantined_at timestamptz NOT NULL DEFAULT now(),
  target text NOT NULL,
  shard_id integer,
  stream_sequence bigint,
  row_key uuid,
  journal_position text NOT NULL,
  sqlstate text NOT NULL,
  message text NOT NULL,
  data bytea NOT NULL
);

-- Snapshot projection names and who created each: a principal may create at most
-- MARKET_DATA_PROJECTION_NAMES_PER_PRINCIPAL names (the default name is the venue's),
-- so no caller can fill the snapshot table, or its view in memory, for the others.
CREATE TABLE runtime.snapshot_projections (
  projection_name text PRIMARY KEY,
  principal_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO runtime.snapshot_projections (projection_name, principal_id)
  SELECT DISTINCT projection_name, '' FROM runtime.market_data_snapshots WHERE projection_name <> 'market-data-top-of-book';
