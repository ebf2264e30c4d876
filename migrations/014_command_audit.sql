-- The audit trail (API contract, "Audit trail"): every order command exactly as it was
-- validated. Each intake batch keeps its commands' JSON texts back to back (an intake
-- record states its text's length), stored with the batch in the commit the
-- acknowledgement waits for; each command_log row names where its intake record is, so
-- GET /admin/v1/audit/commands/{commandId} finds it by the command's id. Batches written
-- before this migration have no texts (NULL).
ALTER TABLE runtime.intake_batches
  ADD COLUMN bodies bytea,
  ADD COLUMN bodies_checksum bigint;
ALTER TABLE runtime.intake_batches ALTER COLUMN bodies SET STORAGE EXTERNAL;

ALTER TABLE runtime.command_log
  ADD COLUMN intake_commit_no bigint,
  ADD COLUMN intake_gateway smallint,
  ADD COLUMN intake_index integer;
