-- Select 1% and insert into the local partition of a partitioned result table
-- (spec: INSERT INTO =result SELECT * FROM =table WHERE hundpct < (?tablesize/100)).
INSERT INTO {result}
SELECT *
FROM {table}
WHERE hundpct < {onepct_bound}
