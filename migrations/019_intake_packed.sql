-- Intake batches stored packed (core/intake-record.ts packIntake): each record's header and
-- command slot, then its texts at their lengths, instead of whole 832-byte records that are
-- mostly room for texts at their maximum. NULL: whole records, as batches stored before.
ALTER TABLE runtime.intake_batches ADD COLUMN layout smallint CHECK (layout = 1);
