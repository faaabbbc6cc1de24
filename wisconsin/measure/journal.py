"""The run's journal: every finished execution is appended (and fsynced) as it finishes, so
a failed or interrupted run still leaves what it measured.

State is kept as JSON-ready dicts in run-file form. The journal (`<run file>.journal`, one
JSON object per line) starts with a base record (the run so far: a skeleton for a new run,
the incomplete run for a resumed one) followed by events; a run file (complete or
"incomplete") is rebuilt from it. A torn last line (a kill mid-write) is ignored; any other
line that is not a record this module writes (hand-edited, damaged) is refused in one line
naming the journal and the line.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from wisconsin import WisconsinError, atomic, jsonfields, outputs
from wisconsin.analysis import stats
from wisconsin.analysis.schedule import BASELINE
from wisconsin.runfiles import runfile
from wisconsin.runfiles.runfile import Run


def journal_path(run_path: Path) -> Path:
    return run_path.with_name(run_path.name + ".journal")


class RunState:
    """The run so far: a base run dict plus rounds and executions, journaled as they come."""

    def __init__(self, base: dict, path: Path | None = None):
        self.base = base
        self.rounds: list[dict] = list(base.get("rounds", []))
        # label -> measurement shell (no reps), timed reps, first warm-up, open times
        self.shells: dict[str, dict] = {}
        self.reps: dict[str, list[dict]] = {}
        self.warmups: dict[str, dict] = {}
        self.opens: dict[str, list[float]] = {}
        for key, prefix in (("measurements", ""), ("baseline", f"{BASELINE}:")):
            for m in base.get(key, []):
                label = f"{prefix}{m['table']}/{m['query']}"
                self.shells[label] = {
                    k: v for k, v in m.items() if k not in ("warmup", "repetitions")
                }
                self.reps[label] = list(m["repetitions"])
                if m["warmup"]["index"] == 0:
                    self.warmups[label] = m["warmup"]
                self.opens[label] = [m.get("startup_s", 0.0)]
        self.path = path
        self._fh = None
        if path is not None:
            try:
                self._fh = open(path, "a")  # noqa: SIM115  (open for the whole run)
                self._write({"t": "base", "run": base})
            except WisconsinError:
                # Not even its first record fits (a full disk): no journal is left behind,
                # so nothing half-written is ever read as a run.
                self.close(remove=True)
                raise
            except OSError as exc:
                self.close(remove=True)
                raise WisconsinError(f"cannot write {path}: {exc.strerror or exc}") from None

    # ------------------------------------------------------------------ events

    def _write(self, record: dict) -> None:
        """Append one record, fsynced; a full disk is one line (the record is not counted:
        a reader drops a torn last line)."""
        if self._fh is None:
            return
        try:
            self._fh.write(json.dumps(record) + "\n")
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:
            raise WisconsinError(
                f"cannot write the run's journal {self.path}: {exc.strerror or exc}"
            ) from None

    def _apply(self, record: dict) -> None:
        if record["t"] == "round":
            self.rounds.append(record["round"])
        elif record["t"] == "rep":
            label = record["label"]
            self.shells.setdefault(label, record["shell"])
            self.opens.setdefault(label, []).append(record["open_s"])
            if record["warmup"]:
                self.warmups.setdefault(label, record["rep"])
            else:
                self.reps.setdefault(label, []).append(record["rep"])

    def add_round(self, round_: runfile.Round) -> None:
        record = {"t": "round", "round": runfile.to_dict(round_)}
        self._apply(record)
        self._write(record)

    def add_rep(
        self, label: str, shell: dict, rep: runfile.Repetition, warmup: bool, open_s: float
    ) -> None:
        record = {
            "t": "rep",
            "label": label,
            "shell": shell,
            "rep": runfile.to_dict(rep),
            "warmup": warmup,
            "open_s": open_s,
        }
        self._apply(record)
        self._write(record)

    def close(self, remove: bool = False) -> None:
        if self._fh is not None:
            fh, self._fh = self._fh, None
            # Every complete record was flushed and fsynced as it was written; what a full
            # disk left in the buffer is a torn record, dropped either way.
            with contextlib.suppress(OSError):
                fh.close()
        if remove and self.path is not None:
            self.path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ queries

    def done_in_round(self, index: int) -> set[str]:
        """Labels already executed in round index (0: the warm-up round)."""
        if index == 0:
            return set(self.warmups)
        return {
            label for label, reps in self.reps.items() if any(r["round"] == index for r in reps)
        }

    def measurement_dicts(self, baseline: bool) -> list[dict]:
        out = []
        for label, shell in self.shells.items():
            if label.startswith(f"{BASELINE}:") != baseline:
                continue
            reps = sorted(self.reps.get(label, []), key=lambda r: r["index"])
            warm = self.warmups.get(label)
            if warm is None:
                if not reps:
                    continue
                warm = dict(reps[0], index=-1)  # no warm-up ran: the first timed, marked -1
            opens = self.opens.get(label) or [0.0]
            out.append(dict(shell, warmup=warm, repetitions=reps, startup_s=stats.median(opens)))
        # the run file lists measurements by P, kind, query (the order they ran in is in rounds)
        rank = {q: i for i, q in enumerate(self.base["config"]["queries"])}
        return sorted(out, key=lambda m: (m["partitions"], m["kind"], rank.get(m["query"], 9)))

    def to_run(self, **changes) -> Run:
        data = dict(
            self.base,
            measurements=self.measurement_dicts(False),
            baseline=self.measurement_dicts(True),
            rounds=self.rounds,
        )
        for key, value in changes.items():
            data[key] = runfile.to_dict(value) if hasattr(value, "__dataclass_fields__") else value
        return runfile.from_dict(data)

    @classmethod
    def from_journal(cls, path: Path) -> RunState:
        """Rebuild the state a journal records (read only; a torn last line is skipped).
        Anything else that is not a record this module writes is WisconsinError, one line
        naming the journal and the line."""
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise WisconsinError(
                f"{path}: cannot read the journal ({exc.strerror or exc})"
            ) from None
        lines = [(n, line) for n, line in enumerate(raw.split(b"\n"), 1) if line.strip()]
        state = None
        for n, line in lines:
            try:
                record = json.loads(line.decode())
            except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
                if n == lines[-1][0]:
                    break  # written when the process died
                what = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "not JSON"
                raise WisconsinError(f"{path}: journal line {n} is damaged ({what})") from None
            t = _check(record, path, n)
            if t == "base":
                if state is not None:
                    raise WisconsinError(f"{path}: journal line {n} is a second base record")
                state = cls(record["run"])
            elif state is None:
                raise WisconsinError(
                    f"{path}: journal does not start with its run (line {n} is a {t} record)"
                )
            else:
                state._apply(record)
        if state is None:
            torn = " (its only line is cut short)" if lines else ""
            raise WisconsinError(f"{path}: empty journal{torn}")
        return state


# The records a journal holds, by "t": read with runfile's checks, so a hand-edited line is
# refused in the run file's words, with its line number.
@dataclass(frozen=True)
class _Base:
    t: str
    run: Run


@dataclass(frozen=True)
class _Round:
    t: str
    round: runfile.Round


@dataclass(frozen=True)
class _Rep:
    t: str
    label: str
    shell: dict
    rep: runfile.Repetition
    warmup: bool
    open_s: jsonfields.NonNegative  # opens make startup_s


_RECORDS = {"base": _Base, "round": _Round, "rep": _Rep}


def _check(record, path: Path, n: int) -> str:
    """The type ("t") of a journal record; WisconsinError naming line n if it is not one."""
    if not isinstance(record, dict):
        raise WisconsinError(
            f"{path}: journal line {n} is {jsonfields.show(record)}, not an object"
        )
    t = record.get("t")
    try:
        if not isinstance(t, str) or t not in _RECORDS:
            said = jsonfields.show(t) if "t" in record else "missing"
            raise jsonfields.FieldError("t", said, '"base", "round" or "rep"')
        jsonfields.convert(_RECORDS[t], record)
        version = record["run"]["schema_version"] if t == "base" else None
        if version not in (None, runfile.SCHEMA_VERSION):
            # a journal is written by this version's runner, never by an older one
            raise jsonfields.FieldError(
                "run.schema_version", jsonfields.show(version), str(runfile.SCHEMA_VERSION)
            )
        if t == "rep":
            # a shell is a measurement but for its repetitions: checked as one
            shell = record["shell"] | {"warmup": record["rep"], "repetitions": []}
            jsonfields.convert(runfile.Measurement, shell, "shell")
            if record["rep"].get("verified") is not True:
                # The runner journals an execution only once its answer is verified: a
                # record saying otherwise was not written by it, and resuming must not
                # count it as a verified measurement.
                raise jsonfields.FieldError(
                    "rep.verified",
                    jsonfields.show(record["rep"].get("verified")),
                    "true (only verified executions are journaled)",
                )
    except jsonfields.FieldError as exc:
        raise WisconsinError(f"{path}: journal line {n}: {exc}") from None
    return t


def save_run(run: Run, path: Path) -> Path:
    """Write the run file; an incomplete run file at path (the one being resumed) is
    replaced atomically, anything else is never overwritten. A complete one is noted as
    published (outputs.published), so a ^C after it is not reported as writing nothing."""
    saved = _save_run(run, path)
    if run.status == "complete":
        outputs.note_published(saved)
    return saved


def _save_run(run: Run, path: Path) -> Path:
    if path.exists():
        try:
            old = runfile.load(path)
        except runfile.RunFileError:
            old = None
        if old is None or old.status == "complete":
            raise WisconsinError(f"{path} already exists; run files are never overwritten")
        atomic.write_text(path, json.dumps(runfile.to_dict(run), indent=1) + "\n")
        return path
    try:
        return runfile.save(run, path)
    except runfile.RunFileError as exc:
        raise WisconsinError(str(exc)) from None


def load_for_resume(path: Path) -> RunState:
    """The state of an incomplete run: from its journal if one is left (the run died
    without writing its file), else from its incomplete run file."""
    journal = journal_path(path)
    if journal.exists():
        return RunState.from_journal(journal)
    try:
        run = runfile.load(path)
    except runfile.RunFileError as exc:
        raise WisconsinError(str(exc)) from None
    if run.status == "complete":
        raise WisconsinError(f"{path} is a complete run; nothing to resume")
    if run.schema_version != runfile.SCHEMA_VERSION or not run.config.interleaved:
        raise WisconsinError(f"{path} was not written by an interleaved run; it cannot resume")
    return RunState(runfile.to_dict(run))
