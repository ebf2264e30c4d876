// The names the venue gives its PostgreSQL connections (`application_name`, shown in
// pg_stat_activity, and in the server's log lines where log_line_prefix has %a): an
// operator looking at a busy server, and the benchmarks measuring it, can tell the
// journal's commits from the projections and the reads. A DATABASE_URL that sets
// application_name itself wins (pg lets the connection string override).

/** Tier 1: the persistence thread's commits of intake and journal batches (the acknowledgement path). */
export const JOURNAL_APPLICATION_NAME = 'venue-journal';
/** Tier 2: the persistence thread's projection groups (command log, lifecycle, executions, trades). */
export const PROJECTOR_APPLICATION_NAME = 'venue-projector';
/** The read thread's pool (reads beyond the shared-memory views, settlement). */
export const READS_APPLICATION_NAME = 'venue-reads';
/** The main thread: migrations, recovery at start, admin work. */
export const MAIN_APPLICATION_NAME = 'venue-main';
/** The persistence thread's start: its catch-up (and `-analyze`, `-books`: the connections beside it). */
export const START_APPLICATION_NAME = 'venue-start';
/** The operator's rebuild of the lifecycle projection. */
export const REBUILD_APPLICATION_NAME = 'venue-rebuild';
/** The operator's session roll (POST /admin/v1/venue/sessions). */
export const SESSION_ROLL_APPLICATION_NAME = 'venue-session-roll';
/** The settlement pool's threads (persistence/settlement-worker.ts): settlement reads and operator workflows. */
export const SETTLEMENT_APPLICATION_NAME = 'venue-settlement';
