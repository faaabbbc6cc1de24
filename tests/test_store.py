import pyarrow as pa
import pytest

import generator
from wisconsin import store
from wisconsin.store import ContentDigest, StoreError, TableSpec


def _digest(batches):
    d = ContentDigest()
    for b in batches:
        d.update(b)
    return d.hexdigest()


def test_digest_ignores_batch_boundaries_and_string_layout():
    table = pa.Table.from_batches(list(generator.generate(5000, 7, 0, 5000, batch_rows=1000)))
    whole = _digest(table.combine_chunks().to_batches())
    assert _digest(table.to_batches(max_chunksize=333)) == whole
    large = table.cast(
        pa.schema(
            [
                pa.field(f.name, pa.large_string() if f.type == pa.string() else f.type)
                for f in table.schema
            ]
        )
    )
    assert _digest(large.to_batches(max_chunksize=777)) == whole
    sliced = [table.slice(0, 10).to_batches()[0], *table.slice(10).to_batches()]
    assert _digest(sliced) == whole


def test_digest_sees_a_changed_value():
    batch = next(generator.generate(1000, 7, 0, 1000))
    changed = batch.set_column(
        0, "unique1", pa.array([1, *batch.column(0).to_pylist()[1:]], pa.int32())
    )
    if changed.column(0)[0].as_py() == batch.column(0)[0].as_py():
        changed = batch.set_column(
            0, "unique1", pa.array([2, *batch.column(0).to_pylist()[1:]], pa.int32())
        )
    assert _digest([changed]) != _digest([batch])


@pytest.mark.parametrize(
    "spec, message",
    [
        (TableSpec("X", 10, 2, 1), "unknown table kind"),
        (TableSpec("F", 0, 2, 1), "rows must be positive"),
        (TableSpec("F", 3, 4, 1), "more partitions"),
        (TableSpec("F", 10, 0, 1), "partitions must be positive"),
        (TableSpec("F", 10, 2, -1), "seed"),
    ],
)
def test_bad_specs_are_refused(spec, message):
    with pytest.raises(StoreError, match=message):
        store.validate_spec(spec)


def test_g_tables_grow_with_partitions():
    assert TableSpec("G", 100, 4, 1).n == 400
    assert TableSpec("F", 100, 4, 1).n == 100
