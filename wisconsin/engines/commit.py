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

The benchmark's timed update is always followed by its untimed undo, and the pair is one
recoverable unit: before the update, update_pair() writes a durable intent naming both
txids and the undo's statements. Recovery drives every partition of a pending pair to the
generated state: a partition holding the update's marker but not the undo's gets the undo
(exactly once, by its marker); any other partition has either both or neither. Whatever
the crash point, the table ends as it was generated, and recover_table() proves it with
the full content digest of every partition it touched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Mapping

from wisconsin import WisconsinError
from wisconsin.interrupts import is_interrupt
from wisconsin.statement import Statement
from wisconsin.store.updates import (  # noqa: F401  (re-exported: the protocol's log)
    LOG_DIR,
    PAIR_PREFIX,
    DecisionLog,
)


class CommitAborted(WisconsinError):
    """The transaction was rolled back on every partition; the table is unchanged."""


class CommitIncomplete(WisconsinError):
    """Committed by decision but not yet on every partition; recover() completes it."""


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
    # recovery only: a partition's committed txids, and (rows, content digest) of a table
    markers: Callable[[int], set[str]] | None = None
    digest: Callable[[int, str], tuple[int, str]] | None = None


class PartitionFailure(WisconsinError):
    def __init__(self, message: str, parts: tuple[int, ...] = ()):
        super().__init__(message)
        self.parts = parts


def run_transaction(
    log: DecisionLog, transport: Transport, txid: str, statements: Mapping[int, Statement]
) -> tuple[dict[int, dict], dict[int, dict], float]:
    """Run one cross-partition update; return (prepare results, commit results, seconds
    the durable commit decision took)."""
    try:
        prepared = transport.prepare_all(txid, statements)
    except BaseException as exc:
        try:
            transport.abort_all(txid)
        finally:
            if isinstance(exc, Exception) and not is_interrupt(exc):
                raise CommitAborted(f"update rolled back on every partition: {exc}") from exc
        raise
    decided = time.perf_counter()
    log.decide(txid, statements)
    decided = time.perf_counter() - decided
    try:
        committed = transport.commit_all(txid)
    except Exception as exc:
        raise CommitIncomplete(
            f"update {txid} was decided but a partition did not commit ({exc}); "
            "it is redone before the table is used again"
        ) from exc
    log.forget(txid)
    return prepared, committed, decided


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


@contextlib.contextmanager
def update_pair(
    table_dir: str | os.PathLike,
    update: str,
    undo: str,
    undo_statements: Mapping[int, Statement],
) -> Iterator[None]:
    """Run the block (update `update`, then undo `undo`) as one recoverable unit.

    The intent is durable before the block starts and is dropped only when the block
    finishes; if it raises (or the process dies), the next open of the table resolves the
    pair with recover_table(). Writing the intent is not part of the timed update.
    """
    log = DecisionLog(table_dir)
    log.begin_pair(update, undo, undo_statements)
    yield
    log.end_pair(update)


def resolve_pairs(log: DecisionLog, transport: Transport, parts: range) -> set[int]:
    """Undo every pending pair's update where it is committed and its undo is not;
    return the partitions that needed it. Idempotent: a crash midway is resolved again."""
    touched: set[int] = set()
    for update, undo, undo_statements in log.pending_pairs():
        for part in parts:
            done = transport.markers(part)
            if update in done and undo not in done:
                transport.redo(part, undo, undo_statements[part])
                touched.add(part)
        # Both halves are settled on every partition: neither decision needs a redo now.
        log.forget(update)
        log.forget(undo)
        log.end_pair(update)
    return touched


class RecoveryMismatch(WisconsinError):
    """After recovery a partition's content differs from its generated content."""


def recover_table(table_dir: str | os.PathLike, transport: Transport, manifest) -> list[int]:
    """Bring a table back to its generated state before it is used: resolve pending
    update/undo pairs, finish any other decided transaction, then verify every partition
    that was touched against its manifest digest. Returns the partitions touched.

    RecoveryMismatch names a partition that still differs (e.g. a lone decided update,
    which the runner never leaves: its updates are always paired with their undo)."""
    log = DecisionLog(table_dir)
    if log.is_empty():
        return []
    parts = range(manifest.partitions)
    # After an interrupted pair every partition is verified, not only those it undid.
    touched = set(parts) if log.pending_pairs() else set()
    resolve_pairs(log, transport, parts)
    for _txid, statements in log.pending():
        touched.update(p for p in statements if p in parts)
    recover(log, transport, parts)
    for part in sorted(touched):
        info = manifest.parts[part]
        rows, digest = transport.digest(part, manifest.table)
        if (rows, digest) != (info.rows, info.checksum):
            raise RecoveryMismatch(
                f"{manifest.name} partition {part}: after recovering an interrupted update "
                f"it holds {rows} rows with digest {digest}, not its generated content "
                f"({info.rows} rows, {info.checksum}); run `wisconsin repair {table_dir}`"
            )
    return sorted(touched)
