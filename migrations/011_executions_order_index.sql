-- runtime.executions (order_id) served no query: fills are read per participant (migration
-- 008's two indexes), an execution's own id is its primary key, and nothing reads the
-- executions of one order (the lifecycle rebuild reads the journal). Its keys are client
-- orderIds, random, so each insert lands on a random leaf: in a sustained run, once the
-- index outgrows what a checkpoint interval's inserts touch, nearly every insert also
-- writes a full-page image of its leaf (README, "Sustained load"). About 0.8 random leaf
-- inserts a command (two executions per fill) go with it.
DROP INDEX runtime.executions_order;
