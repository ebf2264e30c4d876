-- Every trade costs an entry in each of its table's indexes, and every trade writes two
-- executions: B-tree leaf inserts were 12.7 WAL records per command at 8,000 commands/s
-- (pg_walinspect over 5 s), and B-tree descents about a quarter of the projection
-- backend's samples (perf record). Three of
-- them guarded what another index already guards and served no read:
--   executions UNIQUE (shard_id, stream_sequence) and trades UNIQUE (shard_id,
--     stream_sequence): execution_id and trade_id are made from exactly (shard_id,
--     stream_sequence) (core/outcome-format.ts eventIdWords), so their primary keys
--     refuse the same duplicates;
--   trades UNIQUE (tape_sequence): the tape is read per instrument, (instrument_id,
--     tape_sequence), so that index becomes the unique one (a tape cursor can never
--     name two trades of an instrument) and the projector takes its next tape sequence
--     from the identity's sequence at start (it sets it with every group), not from
--     max(tape_sequence), which this index served.
ALTER TABLE runtime.executions DROP CONSTRAINT executions_shard_id_stream_sequence_key;
ALTER TABLE runtime.trades DROP CONSTRAINT trades_shard_id_stream_sequence_key;
CREATE UNIQUE INDEX trades_instrument_tape ON runtime.trades (instrument_id, tape_sequence);
DROP INDEX runtime.trades_instrument;
-- The sequence is at least the largest tape sequence stored (the projector has always set
-- it with each group; this holds for rows written any other way too).
SELECT setval(pg_get_serial_sequence('runtime.trades', 'tape_sequence'), greatest(m, (SELECT last_value FROM runtime.trades_tape_sequence_seq)))
  FROM (SELECT max(tape_sequence) AS m FROM runtime.trades) stored
 WHERE m IS NOT NULL;
ALTER TABLE runtime.trades DROP CONSTRAINT trades_tape_sequence_key;
