-- Own-order and fills reads are answered from memory (persistence/own-reads.ts): the
-- persistence thread keeps every open order and each participant's most recent closed
-- orders and fills. Only a read reaching further back comes here, and scans. The four
-- indexes that served those reads cost an entry for every order written, every update
-- (updated_at was indexed, so no update was HOT) and every execution
-- (docs/decisions/0038).
DROP INDEX runtime.order_lifecycle_participant_recent;
DROP INDEX runtime.order_lifecycle_participant_open;
DROP INDEX runtime.executions_participant_recent;
DROP INDEX runtime.executions_participant_instrument_recent;
