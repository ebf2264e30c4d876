-- The command log is on the acknowledgement path (one row per command, written by
-- COPY before captured answers go out): every index costs each row. Nothing reads it
-- by received_at on a hot path (recovery scans it once at start), so that index goes.
DROP INDEX runtime.command_log_received_at;
