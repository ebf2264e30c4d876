-- Post-trade settlement evidence: an append-only fact trail per scenario run (a venue
-- runId), from which every settlement view is replayed. The database itself refuses
-- to change or remove a fact, and keeps each run's sequence gap-free.

CREATE SCHEMA settlement;

CREATE TABLE settlement.scenario_runs (
  scenario_run_id text PRIMARY KEY CHECK (scenario_run_id ~ '^[A-Za-z0-9._:-]{1,64}$'),
  last_sequence bigint NOT NULL DEFAULT 0 CHECK (last_sequence >= 0)
);

CREATE TABLE settlement.facts (
  scenario_run_id text NOT NULL REFERENCES settlement.scenario_runs (scenario_run_id),
  sequence bigint NOT NULL CHECK (sequence > 0),
  fact_id uuid NOT NULL UNIQUE,
  fact_type text NOT NULL CHECK (fact_type ~ '^Settlement[A-Za-z]{1,64}$'),
  occurred_at_us bigint NOT NULL,
  causation_id uuid,
  origin text NOT NULL CHECK (origin IN ('service', 'operator')),
  payload jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
  -- SHA-256 of the canonical content (type, time to the microsecond, cause, payload, run):
  -- an identical fact posted again is a duplicate, a different one under the same id a conflict.
  content_sha256 bytea NOT NULL CHECK (length(content_sha256) = 32),
  appended_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scenario_run_id, sequence)
);

-- Gap-free: a fact's sequence must be its run's last sequence + 1, which it becomes.
CREATE FUNCTION settlement.next_sequence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  last bigint;
BEGIN
  SELECT last_sequence INTO last FROM settlement.scenario_runs WHERE scenario_run_id = NEW.scenario_run_id FOR UPDATE;
  IF last IS NULL OR NEW.sequence <> last + 1 THEN
    RAISE EXCEPTION 'settlement fact % of run % breaks the sequence (last is %)', NEW.sequence, NEW.scenario_run_id, last
      USING ERRCODE = 'check_violation';
  END IF;
  UPDATE settlement.scenario_runs SET last_sequence = NEW.sequence WHERE scenario_run_id = NEW.scenario_run_id;
  RETURN NEW;
END $$;
CREATE TRIGGER facts_gap_free BEFORE INSERT ON settlement.facts FOR EACH ROW EXECUTE FUNCTION settlement.next_sequence();

-- Append-only: no UPDATE, DELETE or TRUNCATE of a fact, whoever asks.
CREATE FUNCTION settlement.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'settlement facts are append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER facts_append_only BEFORE UPDATE OR DELETE ON settlement.facts FOR EACH ROW EXECUTE FUNCTION settlement.refuse_change();
CREATE TRIGGER facts_no_truncate BEFORE TRUNCATE ON settlement.facts FOR EACH STATEMENT EXECUTE FUNCTION settlement.refuse_change();
-- A run's counter only moves one step at a time (by the trigger above): nobody rewinds it.
CREATE FUNCTION settlement.advance_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR NEW.scenario_run_id <> OLD.scenario_run_id OR NEW.last_sequence <> OLD.last_sequence + 1 THEN
    RAISE EXCEPTION 'a settlement run''s sequence only advances: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER runs_advance_only BEFORE UPDATE OR DELETE ON settlement.scenario_runs FOR EACH ROW EXECUTE FUNCTION settlement.advance_only();
CREATE TRIGGER runs_no_truncate BEFORE TRUNCATE ON settlement.scenario_runs FOR EACH STATEMENT EXECUTE FUNCTION settlement.refuse_change();

-- Post-trade profile overrides (configuration, not evidence: the profile an obligation
-- got, and why, is recorded in its SettlementObligationCreated fact).
CREATE TABLE settlement.profile_overrides (
  scope text NOT NULL CHECK (scope IN ('platform', 'venueSession', 'scenarioRun')),
  scope_id text NOT NULL CHECK ((scope = 'platform') = (scope_id = '')),
  profile text NOT NULL CHECK (profile IN ('instant-post-trade-v1', 'ops-realistic-v1')),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (scope, scope_id)
);
