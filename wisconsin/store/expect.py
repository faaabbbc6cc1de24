"""Expected answers, computed another way: from the generator's own rows, never from the
engine being measured. The runner checks every answer against these.

They are derived once, at build time, by the process that builds each partition (from the
rows it is writing) and kept in the manifest: per partition in `PartitionInfo.answers`, the
whole table's selected-rows digest in `Manifest.answers`. A run reads them instead of
regenerating the table. A manifest written before answers were stored (or by a cluster
build, which keeps no whole-table digest) still works: what is missing is regenerated, and
the user is told so once.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from wisconsin import store
from wisconsin.store import Manifest

UPDATE_DELTA = store.UPDATE_DELTA  # what the update adds to `four` (its undo subtracts it)


def onepct_bound(n: int) -> int:
    """?tablesize/100 in the spec's integer arithmetic."""
    return n // 100


SELECTED_SUFFIX = ".selected.arrow"  # a builder's selected rows, until the manifest is written
ANSWER_KEYS = ("bound", "selected", "sum_onepct", "sum_four", "selected_digest")


@dataclass(frozen=True)
class PartExpect:
    rows: int
    selected: int  # rows with hundpct < n/100 (select, update, join)
    sum_onepct: int
    sum_four: int
    selected_digest: str  # content digest of the selected rows, key order


class TableExpect:
    """Per-partition answers and the whole table's selected-rows digest (the latter may be
    derived lazily: only shared-memory runs need it)."""

    def __init__(
        self,
        parts: tuple[PartExpect, ...],
        selected_digest: str | None,
        derive_digest: Callable[[], str] | None = None,
    ) -> None:
        if selected_digest is None and derive_digest is None:
            raise ValueError("need the selected digest or a way to derive it")
        self.parts = parts
        self._digest = selected_digest
        self._derive = derive_digest

    @property
    def selected_digest(self) -> str:
        if self._digest is None:
            self._digest = self._derive()
        return self._digest

    @property
    def selected(self) -> int:
        return sum(p.selected for p in self.parts)

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.parts)

    @property
    def sum_onepct(self) -> int:
        return sum(p.sum_onepct for p in self.parts)

    @property
    def average(self) -> float:
        return self.sum_onepct / self.rows


class PartAnswers:
    """Accumulates one partition's answers from the generator batches a builder writes."""

    def __init__(self, n: int, checksum: str = store.STORAGE["checksum"]) -> None:
        self.bound = onepct_bound(n)
        self.sum_onepct = 0
        self.sum_four = 0
        self.digest = store.ContentDigest(checksum)

    def update(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Add a batch; return its selected rows."""
        self.sum_onepct += pc.sum(batch.column("onepct")).as_py() or 0
        self.sum_four += pc.sum(batch.column("four")).as_py() or 0
        chosen = batch.filter(pc.less(batch.column("hundpct"), self.bound))
        self.digest.update(chosen)
        return chosen

    def as_dict(self) -> dict:
        return {
            "bound": self.bound,
            "selected": self.digest.rows,
            "sum_onepct": self.sum_onepct,
            "sum_four": self.sum_four,
            "selected_digest": self.digest.hexdigest(),
        }


# --------------------------------------------------------------------------- whole-table digest


def selected_file(table_dir: str | Path, index: int) -> Path:
    return Path(table_dir) / f"part-{index:03d}{SELECTED_SUFFIX}"


def whole_selected_digest(table_dir: Path, parts: Iterable[store.PartitionInfo]) -> str | None:
    """The whole table's selected-rows digest from the builders' selected-rows files, in key
    order; None if any is missing or unreadable (a partition built by older code)."""
    whole = store.ContentDigest()
    for p in sorted(parts, key=lambda p: p.index):
        try:
            with pa.ipc.open_stream(selected_file(table_dir, p.index)) as reader:
                for batch in reader:
                    whole.update(batch)
        except (OSError, pa.ArrowInvalid):
            return None
    return whole.hexdigest()


def table_answers(table_dir: Path, parts: Iterable[store.PartitionInfo], n: int) -> dict | None:
    """Manifest.answers for a table whose partitions were just built (None if unknown)."""
    digest = whole_selected_digest(table_dir, parts)
    return None if digest is None else {"bound": onepct_bound(n), "selected_digest": digest}


def remove_selected_files(table_dir: Path) -> None:
    for f in Path(table_dir).glob(f"part-*{SELECTED_SUFFIX}*"):
        f.unlink(missing_ok=True)


# --------------------------------------------------------------------------- reading


def _stored_part(p: store.PartitionInfo, bound: int) -> PartExpect | None:
    a = p.answers
    if not isinstance(a, dict) or any(k not in a for k in ANSWER_KEYS) or a["bound"] != bound:
        return None
    if not all(isinstance(a[k], int) for k in ANSWER_KEYS[:4]):
        return None
    if not isinstance(a["selected_digest"], str) or not 0 <= a["selected"] <= p.rows:
        return None
    return PartExpect(p.rows, a["selected"], a["sum_onepct"], a["sum_four"], a["selected_digest"])


_told: set[tuple[str, str, str]] = set()


def _tell_once(m: Manifest, what: str) -> None:
    key = (m.name, m.created_utc, what)
    if key not in _told:
        _told.add(key)
        print(
            f"note: {m.name}: {what}; regenerating its {m.rows:,} rows to derive them "
            "(rebuild the table with this version to skip this)",
            file=sys.stderr,
        )


def expected_answers(m: Manifest) -> TableExpect:
    """The table's answers: read from the manifest when it holds them, else regenerated."""
    bound = onepct_bound(m.rows)
    parts = [_stored_part(p, bound) for p in m.parts]
    if any(p is None for p in parts):
        _tell_once(m, "its manifest holds no usable expected answers (built by an older version)")
        return regenerate_answers(m)
    table = m.answers if isinstance(m.answers, dict) else {}
    digest = table.get("selected_digest") if table.get("bound") == bound else None

    def derive() -> str:
        _tell_once(m, "its manifest holds no whole-table digest of the selected rows")
        return regenerate_answers(m).selected_digest

    return TableExpect(
        tuple(parts), digest if isinstance(digest, str) else None, None if digest else derive
    )


def regenerate_answers(m: Manifest) -> TableExpect:
    """Regenerate the table's rows (in bounded memory) and derive every answer."""
    checksum = store.checksum_of(m)  # the digests the engine's are compared with
    whole = store.ContentDigest(checksum)
    parts = []
    for p in m.parts:
        acc = PartAnswers(m.rows, checksum)
        for batch in store.generator.generate(m.rows, m.seed, p.lo, p.hi):
            whole.update(acc.update(batch))
        a = acc.as_dict()
        parts.append(
            PartExpect(p.rows, a["selected"], a["sum_onepct"], a["sum_four"], a["selected_digest"])
        )
    return TableExpect(tuple(parts), whole.hexdigest())
