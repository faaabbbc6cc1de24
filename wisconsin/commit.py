"""All-or-nothing updates across partitions that DuckDB commits one file at a time.

DuckDB commits one database file per transaction, so the coordinator runs a commit
protocol with a durable decision (presumed abort):

1. prepare: every partition runs the update and inserts a marker row (txid) into its
   wisconsin_txn table, inside its still-open transaction;
2. decide: once every partition prepared, the coordinator writes the commit decision
   (txid and each partition's statement) durably to the table's decision log;
3. commit: every partition commits (the marker commits atomically with the update);
4. forget: the decision record is deleted.

A failure before 2 aborts everywhere: nothing was committed, and a dead worker's open
transaction dies with it. A failure after 2 leaves a decision record; before the table is
used again, recover() redoes the statement on every partition whose marker is missing
(the marker makes redo exactly-once). DuckDB has no PREPARE TRANSACTION, so a prepared
partition that dies loses its work; the logical redo is what makes step 3 safe.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from wisconsin import WisconsinError
from wisconsin.queries import Statement

LOG_DIR = "_txlog"


class CommitAborted(WisconsinError):
    """The transaction was rolled back on every partition; the table is unchanged."""


class CommitIncomplete(WisconsinError):
    """Committed by decision but not yet on every partition; recover() completes it."""


class DecisionLog:
    """Durable commit decisions, one small JSON file per txid, in the table directory."""

    def __init__(self, table_dir: str | os.PathLike):
        self.dir = Path(table_dir) / LOG_DIR

    def decide(self, txid: str, statements: Mapping[int, Statement]) -> None:
        self.dir.mkdir(exist_ok=True)
        record = {
            "txid": txid,
            "decision": "commit",
            "statements": {str(p): dataclasses.asdict(s) for p, s in statements.items()},
        }
        path = self.dir / f"{txid}.json"
        tmp = self.dir / f".{txid}.tmp"
        with open(tmp, "w") as fh:
            json.dump(record, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)  # the rename itself must survive a crash: it IS the decision
        finally:
            os.close(fd)

    def forget(self, txid: str) -> None:
        (self.dir / f"{txid}.json").unlink(missing_ok=True)

    def pending(self) -> list[tuple[str, dict[int, Statement]]]:
        if not self.dir.is_dir():
            return []
        out = []
        for path in sorted(self.dir.glob("*.json")):
            record = json.loads(path.read_text())
            stmts = {
                int(p): Statement(**(s | {"settings": tuple(tuple(x) for x in s["settings"])}))
                for p, s in record["statements"].items()
            }
            out.append((record["txid"], stmts))
        return out


@dataclasses.dataclass(frozen=True)
class Transport:
    """How the coordinator reaches the partitions (Dask tasks, or threads over cursors).

    prepare_all/commit_all run on every partition in parallel and return {part: result};
    they raise PartitionFailure naming the partitions that failed.
    """

    prepare_all: Callable[[str, Mapping[int, Statement]], dict[int, dict]]
    commit_all: Callable[[str], dict[int, dict]]
    abort_all: Callable[[str], None]
    redo: Callable[[int, str, Statement], None]


class PartitionFailure(WisconsinError):
    def __init__(self, message: str, parts: tuple[int, ...] = ()):
        super().__init__(message)
        self.parts = parts


def run_transaction(
    log: DecisionLog, transport: Transport, txid: str, statements: Mapping[int, Statement]
) -> tuple[dict[int, dict], dict[int, dict]]:
    """Run one cross-partition update; return (prepare results, commit results)."""
    try:
        prepared = transport.prepare_all(txid, statements)
    except BaseException as exc:
        try:
            transport.abort_all(txid)
        finally:
            if isinstance(exc, Exception):
                raise CommitAborted(f"update rolled back on every partition: {exc}") from exc
        raise
    log.decide(txid, statements)
    try:
        committed = transport.commit_all(txid)
    except Exception as exc:
        raise CommitIncomplete(
            f"update {txid} was decided but a partition did not commit ({exc}); "
            "it is redone before the table is used again"
        ) from exc
    log.forget(txid)
    return prepared, committed


def recover(log: DecisionLog, transport: Transport, parts: range) -> list[str]:
    """Finish every decided transaction on every partition; return the txids redone."""
    done = []
    for txid, statements in log.pending():
        for part in parts:
            if part in statements:
                transport.redo(part, txid, statements[part])
        log.forget(txid)
        done.append(txid)
    return done
