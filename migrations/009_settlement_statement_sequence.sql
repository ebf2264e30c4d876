-- Settlement facts stay gap-free, checked once per statement instead of once per row.
-- Migration 004's row trigger locked and updated the run's counter for every fact it
-- inserted, so a bundle of n facts in one statement left n versions of that one row in
-- the transaction, each later check walking the versions before it: materializing a run
-- of 20,000 trades took 43 s, growing with the square of its size. Now a row only checks
-- that its sequence is beyond the counter (no lock, no write); after the statement, each
-- run's new facts must continue its counter without a gap, and the counter moves once.

CREATE OR REPLACE FUNCTION settlement.next_sequence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  last bigint;
BEGIN
  SELECT last_sequence INTO last FROM settlement.scenario_runs WHERE scenario_run_id = NEW.scenario_run_id;
  IF last IS NULL OR NEW.sequence <= last THEN
    RAISE EXCEPTION 'settlement fact % of run % breaks the sequence (last is %)', NEW.sequence, NEW.scenario_run_id, last
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE FUNCTION settlement.advance_runs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  run record;
  last bigint;
BEGIN
  FOR run IN SELECT scenario_run_id, min(sequence) AS first, max(sequence) AS final, count(*) AS facts FROM inserted GROUP BY scenario_run_id LOOP
    SELECT last_sequence INTO last FROM settlement.scenario_runs WHERE scenario_run_id = run.scenario_run_id FOR UPDATE;
    IF last IS NULL OR run.first <> last + 1 OR run.final - run.first + 1 <> run.facts THEN
      RAISE EXCEPTION 'settlement facts % to % of run % breaks the sequence (last is %)', run.first, run.final, run.scenario_run_id, last
        USING ERRCODE = 'check_violation';
    END IF;
    UPDATE settlement.scenario_runs SET last_sequence = run.final WHERE scenario_run_id = run.scenario_run_id;
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER facts_advance_runs AFTER INSERT ON settlement.facts REFERENCING NEW TABLE AS inserted
  FOR EACH STATEMENT EXECUTE FUNCTION settlement.advance_runs();

-- The counter still only advances, now by as many steps as there are facts after it.
CREATE OR REPLACE FUNCTION settlement.advance_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR NEW.scenario_run_id <> OLD.scenario_run_id OR NEW.last_sequence <= OLD.last_sequence
     OR (SELECT count(*) FROM settlement.facts
          WHERE scenario_run_id = NEW.scenario_run_id AND sequence > OLD.last_sequence AND sequence <= NEW.last_sequence) <> NEW.last_sequence - OLD.last_sequence THEN
    RAISE EXCEPTION 'a settlement run''s sequence only advances: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END $$;
