"""What the DebitCredit fault drills share: a bench child read line by line, how it ended,
and the database after `wisconsin repair` (debitcredit_partition_kill.py,
debitcredit_full_disk.py)."""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WISCONSIN = [sys.executable, "-m", "wisconsin"]


def env() -> dict:
    """The child runs this checkout's code."""
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return e


class Bench:
    """`wisconsin bench --workload debitcredit ...` as a child; its stderr read live."""

    def __init__(self, args: list[str]):
        self.proc = subprocess.Popen(
            [*WISCONSIN, "bench", "--workload", "debitcredit", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
            cwd=ROOT,
        )
        self.lines: queue.Queue = queue.Queue()
        self.err: list[str] = []
        self.out = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.err.append(line.rstrip("\n"))
            self.lines.put(line)

    def wait_for(self, prefix: str, timeout: float) -> bool:
        """Until a stderr line starts with prefix (True), or the bench ends or time is up."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.lines.get(timeout=0.05).startswith(prefix):
                    return True
            except queue.Empty:
                if self.proc.poll() is not None:
                    return False
        return False

    def finish(self, timeout: float = 300) -> int:
        self.out = self.proc.stdout.read()
        rc = self.proc.wait(timeout)
        self._reader.join(10)
        return rc


PROGRESS = ("schedule:", "P=")  # the bench's own progress lines on stderr


def ending(rc: int, bench: Bench) -> tuple[str, list[str]]:
    """('traceback' | 'silent' | 'one line' | 'finished' | 'other', the lines that are not
    progress)."""
    text = "\n".join(bench.err) + "\n" + bench.out
    said = [line for line in bench.err if line and not line.startswith(PROGRESS)]
    if "Traceback" in text:
        return "traceback", said
    if rc == 0:
        return "finished", said
    if not said:
        return "silent", said
    if len(said) == 1 and said[0].startswith("Error: "):
        return "one line", said
    return "other", said


@dataclass
class AfterRepair:
    repair_rc: int
    repair: str
    info_rc: int
    info: str
    check_rc: int
    check: str
    notes: list[str] = field(default_factory=list)

    @property
    def agree(self) -> bool:
        """repair, the audit against the drivers' logs (info) and the independent duckdb-only
        check all say the database is whole."""
        return self.repair_rc == 0 and self.info_rc == 0 and self.check_rc == 0


def _run(args: list[str]) -> tuple[int, str]:
    p = subprocess.run(args, capture_output=True, text=True, env=env(), cwd=ROOT, timeout=300)
    return p.returncode, (p.stdout + p.stderr).strip()


def repair_and_check(db_dir: Path) -> AfterRepair:
    """`wisconsin repair`, then `wisconsin info` (the audit: every acknowledged transaction
    present) and the independent check (python -m wisconsin.workloads.debitcredit.check)."""
    rrc, rout = _run([*WISCONSIN, "repair", str(db_dir)])
    irc, iout = _run([*WISCONSIN, "info", str(db_dir)])
    crc, cout = _run([sys.executable, "-m", "wisconsin.workloads.debitcredit.check", str(db_dir)])
    return AfterRepair(rrc, rout, irc, iout, crc, cout)


def last(text: str) -> str:
    return (text.strip().splitlines() or [""])[-1]


def tally(kinds: list[str]) -> str:
    c = Counter(kinds)
    return ", ".join(f"{k}: {n}" for k, n in sorted(c.items()))


def conclude(ok: bool, root: Path, keep: bool) -> int:
    """The drill's verdict line and exit status; its scratch directory goes unless kept."""
    print("drill: " + ("PASS" if ok else "FAIL"))
    if not keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if ok else 1
