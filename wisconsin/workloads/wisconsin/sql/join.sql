-- Clustered 1% self-join via the primary key, inserted into a partitioned result table.
-- {copy} is a real second table holding the same rows ("copies of themselves").
INSERT INTO {result}
SELECT one.unique1, one.unique2, one.two, one.four,
       one.ten, one.twenty, one.onepct, one.tenpct,
       one.twenpct, one.fiftypct, one.hundpct,
       one.odd1pct, one.even1pct, one.stringu1,
       two.stringu2, two.stringu3
FROM {table} one, {copy} two
WHERE one.unique2 = two.unique2
  AND one.hundpct <= ({onepct_bound} - 1)
  AND two.hundpct <= ({onepct_bound} - 1)
