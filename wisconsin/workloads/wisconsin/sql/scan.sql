-- Table Scan (spec: SELECT * FROM =table WHERE hundpct > ?tablesize FOR BROWSE ACCESS).
-- Never returns a row. Variants differ only in how DuckDB is kept from proving that early:
--   as-written        the spec's predicate; DuckDB proves it empty from column statistics
--                     and reads nothing (reported, but not a scan)
--   predicate-column  an opaque predicate: no statistics or zone maps can prove it empty,
--                     so every row of hundpct is read (a columnar engine reads one column)
--   full-row          (default) the spec's intent: statistics propagation and filter
--                     pushdown are disabled, so every row of every column is read
SELECT *
FROM {table}
WHERE {predicate}
