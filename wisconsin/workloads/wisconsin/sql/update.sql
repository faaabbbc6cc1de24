-- Update 1% in ONE transaction over all partitions
-- (spec: UPDATE =table SET four = four + 117 WHERE hundpct < (?tablesize/100)).
-- {delta} is +117 for the timed update and -117 for the untimed undo.
UPDATE {table}
SET four = four + {delta}
WHERE hundpct < {onepct_bound}
