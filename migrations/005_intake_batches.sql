-- Tier 1 becomes what ARCHITECTURE.md asks of it: a few narrow rows per commit. One
-- commit (one transaction) holds one intake_batches row per gateway (the intake
-- records that gateway published since the last commit, packed as they sat on its
-- ring) and one journal_batches row per shard. The command log becomes a tier-2
-- projection: one row per command, written together with its outcome once the
-- outcome is on the journal; the envelope is no longer stored, it is rendered from
-- the journal when read (journal_offset/journal_length locate the command in its
-- batch). Before, every command cost a wide row with two unique indexes on the
-- acknowledgement path and another wide row (with its rendered envelope) behind it.

DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM runtime.command_log cl WHERE NOT EXISTS (SELECT 1 FROM runtime.command_outcomes co WHERE co.command_id = cl.command_id)) THEN
    RAISE EXCEPTION 'the command log holds commands without an outcome (the previous version stopped without recovering them): start the previous version once and stop it, then upgrade';
  END IF;
  IF EXISTS (
    SELECT 1 FROM runtime.journal_batches j
     WHERE j.last_sequence > coalesce((SELECT w.sequence FROM runtime.projection_watermarks w WHERE w.projection = 'runtime' AND w.shard_id = j.shard_id), 0)
  ) THEN
    RAISE EXCEPTION 'the projections are behind the journal: start the previous version once and stop it, then upgrade';
  END IF;
END $$;

CREATE TABLE runtime.intake_batches (
  commit_no bigint NOT NULL CHECK (commit_no > 0),
  gateway_id smallint NOT NULL CHECK (gateway_id >= 0),
  record_count integer NOT NULL CHECK (record_count > 0),
  checksum bigint NOT NULL,
  payload bytea NOT NULL,
  committed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (commit_no, gateway_id)
);

-- Binary payloads: stored out of line, not compressed (compressing them cost the
-- server CPU on the acknowledgement path and gained little).
ALTER TABLE runtime.intake_batches ALTER COLUMN payload SET STORAGE EXTERNAL;
ALTER TABLE runtime.journal_batches ALTER COLUMN payload SET STORAGE EXTERNAL;
-- The commit that wrote a journal batch (null for batches written before this migration).
ALTER TABLE runtime.journal_batches ADD COLUMN commit_no bigint CHECK (commit_no > 0);

ALTER TABLE runtime.command_log
  ADD COLUMN stream_sequence bigint CHECK (stream_sequence > 0),
  ADD COLUMN batch_first_sequence bigint,
  ADD COLUMN shard_batch bigint CHECK (shard_batch > 0),
  ADD COLUMN result_status smallint CHECK (result_status IN (1, 2)),
  ADD COLUMN reject_code text,
  ADD COLUMN occurred_at timestamptz,
  ADD COLUMN journal_offset integer CHECK (journal_offset >= 0),
  ADD COLUMN journal_length integer CHECK (journal_length > 0);

UPDATE runtime.command_log cl
   SET stream_sequence = co.stream_sequence, batch_first_sequence = co.batch_first_sequence, shard_batch = co.shard_batch,
       result_status = co.result_status, reject_code = co.reject_code, occurred_at = co.occurred_at
  FROM runtime.command_outcomes co
 WHERE co.command_id = cl.command_id;

ALTER TABLE runtime.command_log
  ALTER COLUMN stream_sequence SET NOT NULL,
  ALTER COLUMN batch_first_sequence SET NOT NULL,
  ALTER COLUMN shard_batch SET NOT NULL,
  ALTER COLUMN result_status SET NOT NULL,
  ALTER COLUMN occurred_at SET NOT NULL,
  DROP COLUMN slot; -- re-driving reads the intake batches now

DROP TABLE runtime.command_outcomes;
-- The canonical outcome of every command, as a view of the command log.
CREATE VIEW runtime.command_outcomes AS
  SELECT command_id, shard_id, stream_sequence, batch_first_sequence, shard_batch, result_status, reject_code, order_id, occurred_at
    FROM runtime.command_log;

-- Tier 2 writes it (big COPYs, rows in about time order): the start-up reload of the
-- most recent commands reads it backwards instead of sorting the whole log.
CREATE INDEX command_log_received_at ON runtime.command_log (received_at);
