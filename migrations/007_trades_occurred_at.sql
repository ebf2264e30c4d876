-- Bars (GET /api/v1/market-data/bars) aggregate an instrument's trades in a time window
-- (by default the last hour). The only index by instrument is (instrument_id,
-- tape_sequence), so every bars read walked all of the instrument's trades, however old:
-- 250-450 ms for the last hour of an instrument with 0.7-1.3 million trades, and growing
-- with the history. Trades are appended in time order, so a BRIN index on occurred_at
-- (a summary of each 128-page range: a few pages for millions of rows, next to nothing
-- per insert) narrows a window to the ranges that hold it. autosummarize: the ranges
-- filled since the last vacuum are summarized as they fill, not left for the scan.
CREATE INDEX trades_occurred_at ON runtime.trades USING brin (occurred_at) WITH (autosummarize = on);
