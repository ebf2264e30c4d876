-- The command log's btree on received_at served one read, the start's reload of the most
-- recent commands into the gateways' shared tables, at the cost of an index entry in a
-- second random place for every command written. The start now takes the most recent
-- commands by intake commit (each row names its intake commit since 014): a BRIN range
-- of the commits covering the last N intake records, which costs next to nothing to keep
-- (rows arrive in about commit order). Rows written before 014 have no intake commit: the
-- reload leaves them out, and storage still answers for them (the key filters hold them).
DROP INDEX runtime.command_log_received_at;
CREATE INDEX command_log_intake_commit ON runtime.command_log USING brin (intake_commit_no) WITH (autosummarize = on);
