"""Expected answers, computed another way: from the generator's own rows, never from the
engine being measured. The runner checks every answer against these."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow.compute as pc

from wisconsin import store
from wisconsin.queries import onepct_bound
from wisconsin.store import Manifest


@dataclass(frozen=True)
class PartExpect:
    rows: int
    selected: int  # rows with hundpct < n/100 (select, update, join)
    sum_onepct: int
    sum_four: int
    selected_digest: str  # content digest of the selected rows, key order


@dataclass(frozen=True)
class TableExpect:
    parts: tuple[PartExpect, ...]
    selected_digest: str  # all selected rows of the table, key order

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


def expected_answers(m: Manifest) -> TableExpect:
    """Regenerate the table's rows (in bounded memory) and derive every answer."""
    bound = onepct_bound(m.rows)
    whole = store.ContentDigest()
    parts = []
    for p in m.parts:
        sel = store.ContentDigest()
        sum_onepct = sum_four = 0
        for batch in store.generator.generate(m.rows, m.seed, p.lo, p.hi):
            sum_onepct += pc.sum(batch.column("onepct")).as_py() or 0
            sum_four += pc.sum(batch.column("four")).as_py() or 0
            chosen = batch.filter(pc.less(batch.column("hundpct"), bound))
            sel.update(chosen)
            whole.update(chosen)
        parts.append(PartExpect(p.rows, sel.rows, sum_onepct, sum_four, sel.hexdigest()))
    return TableExpect(tuple(parts), whole.hexdigest())
