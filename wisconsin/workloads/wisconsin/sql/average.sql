-- Average (spec: SELECT AVG(onepct) FROM =table). As in the spec's plan, each partition
-- returns its SUM and COUNT and the coordinator combines them into the exact average.
SELECT SUM(onepct)::BIGINT AS total, COUNT(onepct) AS n
FROM {table}
