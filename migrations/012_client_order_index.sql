-- The clientOrderId table of the gateways is bounded: it forgets its oldest claims, and a
-- restart reloads only some. A claim it may have forgotten (its key filter says so) is
-- looked up here: the newest order of the participant with that clientOrderId. Without an
-- index that read scanned every order of the participant. Partial: orders without a
-- clientOrderId (the load generator's, most bots') pay nothing for it.
CREATE INDEX order_lifecycle_client_order ON runtime.order_lifecycle_state (participant_id, client_order_id) WHERE client_order_id IS NOT NULL;
