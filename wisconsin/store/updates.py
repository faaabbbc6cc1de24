"""A table's update journal: durable commit decisions and update/undo intents, one small
JSON file each in the table's _txlog directory. engines.commit writes it while it runs the
cross-partition protocol; recovery and `wisconsin repair` read it. Plain data only: the
statements it records are wisconsin.statement.Statement."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path

from wisconsin import atomic
from wisconsin.statement import Statement

LOG_DIR = "_txlog"
PAIR_PREFIX = "pair-"  # update/undo intents; every other *.json is a commit decision


class DecisionLog:
    """Durable commit decisions, one small JSON file per txid, in the table directory."""

    def __init__(self, table_dir: str | os.PathLike):
        self.dir = Path(table_dir) / LOG_DIR

    def _write(self, name: str, record: dict) -> None:
        self.dir.mkdir(exist_ok=True)
        # fsynced file and directory: the rename itself must survive a crash, it IS the record
        atomic.write_text(self.dir / f"{name}.json", json.dumps(record))

    def decide(self, txid: str, statements: Mapping[int, Statement]) -> None:
        self._write(
            txid,
            {"txid": txid, "decision": "commit", "statements": _dump(statements)},
        )

    def forget(self, txid: str) -> None:
        (self.dir / f"{txid}.json").unlink(missing_ok=True)

    def pending(self) -> list[tuple[str, dict[int, Statement]]]:
        """Decided transactions not yet known to be committed everywhere."""
        if not self.dir.is_dir():
            return []
        out = []
        for path in sorted(self.dir.glob("*.json")):
            if path.name.startswith(PAIR_PREFIX):
                continue
            record = atomic.read_json(path, "update journal record", object_only=True)
            out.append((record["txid"], _load(record["statements"])))
        return out

    # ------------------------------------------------------------------ update/undo pairs

    def begin_pair(self, update: str, undo: str, undo_statements: Mapping[int, Statement]) -> None:
        """Durably record that txid `update` is followed by txid `undo` (before either)."""
        self._write(
            PAIR_PREFIX + update,
            {"update": update, "undo": undo, "undo_statements": _dump(undo_statements)},
        )

    def end_pair(self, update: str) -> None:
        self.forget(PAIR_PREFIX + update)

    def pending_pairs(self) -> list[tuple[str, str, dict[int, Statement]]]:
        """(update txid, undo txid, undo statements) of every unfinished pair."""
        if not self.dir.is_dir():
            return []
        out = []
        for path in sorted(self.dir.glob(PAIR_PREFIX + "*.json")):
            record = atomic.read_json(path, "update journal record", object_only=True)
            out.append((record["update"], record["undo"], _load(record["undo_statements"])))
        return out

    def is_empty(self) -> bool:
        return not self.dir.is_dir() or not any(self.dir.glob("*.json"))

    def clear(self) -> None:
        """Drop every record: only for a table whose partitions were all just rebuilt."""
        if self.dir.is_dir():
            for path in self.dir.iterdir():
                path.unlink(missing_ok=True)


def _dump(statements: Mapping[int, Statement]) -> dict:
    return {str(p): dataclasses.asdict(s) for p, s in statements.items()}


def _load(record: dict) -> dict[int, Statement]:
    return {
        int(p): Statement(**(s | {"settings": tuple(tuple(x) for x in s["settings"])}))
        for p, s in record.items()
    }
