"""Running the cases of tests/harness/bad_inputs.py: their fixtures in a scratch directory,
one invocation (a subprocess, or in this process through the CLI's entry point), the
directory's tree before and after, and the verdict."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.bad_inputs import Case
from harness.exits import completed

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


# --------------------------------------------------------------------------- fixtures


def build(root: Path, real: bool = False) -> dict[str, Path]:
    """Every placeholder's fixture under root (an empty directory). real: the DebitCredit
    database and run, and the A/B file, come from a tiny `bench --workload debitcredit` and
    an `ab` of 2 blocks a side (subprocesses, ~20 s); else from tests/fixtures, a tiny
    schema build and an A/B file of one real run as every block (in process, ~3 s)."""
    p = {name: root / name for name in ("data", "dcdata", "runs", "docs", "mixed")}
    p |= {
        "random": root / "random.bin",
        "empty": root / "empty.json",
        "foreign": root / "package.json",
        "dir": root / "emptydir",
        "missing": root / "nope",
        "new": root / "new-out",
        "table": p["data"] / "F2",
    }
    runs = p["runs"]
    runs.mkdir()
    _fixture(["generate", "--kind", "F", "--rows", "2000", "--partitions", "1,2", "--seed", "7",
              "--data", str(p["data"]), "--quiet"], real)  # fmt: skip
    shutil.copy(FIXTURES / "audit_tiny_sn.json", runs / "wisconsin.json")
    if real:
        out = root / "bench-out"
        _fixture(["bench", "--workload", "debitcredit", "--partitions", "1", "--branches", "1",
                  "--step-seconds", "0.2", "--repeat", "1", "--data", str(p["dcdata"]),
                  "--out", str(out), "--quiet"], real)  # fmt: skip
        (dc_run,) = out.glob("debitcredit-*[0-9]Z.json")
        shutil.copy(dc_run, runs / "debitcredit.json")
        shutil.rmtree(out)
        (p["dcdb"],) = (p["dcdata"] / "debitcredit").glob("dc*")
        _fixture(["ab", "--data", str(p["data"]), "--tables", "F", "--queries", "average",
                  "--mode", "shared-memory", "--warmup", "0", "--cache", "warm",
                  "--a", "--memory-limit 300MB", "--b", "--memory-limit 200MB", "--blocks", "2",
                  "--out", str(out), "--quiet"], real)  # fmt: skip
        (ab,) = out.glob("*-ab.json")
        shutil.copy(ab, runs / "ab.json")
        shutil.rmtree(out)
    else:
        from wisconsin.workloads.debitcredit import schema

        tiny = schema.Sizing(branches_per_partition=2, tellers_per_branch=3, accounts_per_branch=50)
        p["dcdb"] = schema.build(p["dcdata"] / "debitcredit", 1, tiny)[0].parent
        shutil.copy(FIXTURES / "debitcredit_run.json", runs / "debitcredit.json")
        _ab_file(runs / "wisconsin.json", runs / "ab.json")
    for key, name in (("wrun", "wisconsin"), ("dcrun", "debitcredit"), ("ab", "ab")):
        p[key] = runs / f"{name}.json"
    _tpcc(root, p)
    # a second DebitCredit run for compare: the same measurements, another start
    p["dcrun2"] = runs / "debitcredit-2.json"
    second = dict(json.loads(p["dcrun"].read_text()), started_utc="2000-01-01T00:00:00Z")
    p["dcrun2"].write_text(json.dumps(second))
    p["journal"] = runs / "wisconsin-2.json.journal"
    p["journal"].write_text('{"repetition": 1}\n')
    p["random"].write_bytes(random.Random(45).randbytes(4096))
    p["empty"].write_bytes(b"")
    p["foreign"].write_text(json.dumps({"name": "not-ours", "version": "1.0.0"}))
    p["dir"].mkdir()
    p["docs"].mkdir()
    (p["docs"] / "README.md").write_text("# notes\n")
    p["mixed"].mkdir()
    shutil.copytree(p["data"] / "F1", p["mixed"] / "F1")
    (p["mixed"] / "notes.txt").write_text("mine\n")
    return p


def _tpcc(root: Path, p: dict[str, Path]) -> None:
    """A TPC-C database of one warehouse at a tiny scale (~3 s), and two TPC-C run files
    (forged by the audit's tests; the same measurements, two starts). The database is built
    in a child: its builders are spawned processes, which import the __main__ of whoever
    asks (benchmarks/bad_inputs.py could not be imported from theirs)."""
    p["tpdb"] = root / "tpdata" / "tpcc"
    build = (
        "import sys; from wisconsin.workloads.tpcc import load; "
        "from wisconsin.workloads.tpcc.schema import Placement, Scale; "
        "load.build(sys.argv[1], Placement(1, 1), seed=3, "
        "scale=Scale(customers_per_district=30, items=200))"
    )
    subprocess.run([sys.executable, "-c", build, str(p["tpdb"])], check=True, timeout=120)
    p["tprun"], p["tprun2"] = p["runs"] / "tpcc.json", p["runs"] / "tpcc-2.json"
    shutil.copy(FIXTURES / "tpcc_run.json", p["tprun"])
    second = dict(json.loads(p["tprun"].read_text()), started_utc="2000-01-01T00:00:00Z")
    p["tprun2"].write_text(json.dumps(second))


def _fixture(args: list[str], real: bool) -> None:
    """A command that makes a fixture: done, or (a tiny bench) done with its audit failed."""
    ran = cli(args, real)
    if not completed(ran):
        raise RuntimeError(f"fixture `wisconsin {shlex.join(args)}` failed: {ran.stderr}")


def _ab_file(run: Path, out: Path) -> None:
    """An A/B file of 2 blocks a side, each block the same real run."""
    from wisconsin.runfiles import abfile, runfile

    r = runfile.load(run)
    order = ("A", "B", "B", "A")
    abfile.save(abfile.ABRun(r.started_utc, r.finished_utc, "", "", order, (r, r), (r, r),
                             "2 blocks a side"), out)  # fmt: skip


@contextlib.contextmanager
def full_disk(root: Path) -> Iterator[Path | None]:
    """A 1 MiB tmpfs at root/full, filled; None where it cannot be mounted (not root)."""
    where = root / "full"
    if os.geteuid() != 0 or shutil.which("mount") is None:
        yield None
        return
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)],
                          capture_output=True)  # fmt: skip
    if done.returncode != 0:
        where.rmdir()
        yield None
        return
    try:
        with open(where / "filler", "wb") as f, contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)
        where.rmdir()


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str


def cli(args: list[str], real: bool, cwd: Path | None = None, timeout: float = 300) -> Ran:
    """`wisconsin ARGS`: a subprocess (real) or in this process, through the CLI's own
    entry point (its one-line errors, as a user sees them)."""
    return _subprocess(args, cwd, timeout) if real else _in_process(args, cwd)


def _subprocess(args: list[str], cwd: Path | None, timeout: float) -> Ran:
    """A new session, so a command still working at the timeout goes with all its children
    (Dask workers); it counts as exit 124, as timeout(1) says."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, "-m", "wisconsin", *args], cwd=cwd, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)  # fmt: skip
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        return Ran(124, out, err + f"\n(still working after {timeout:.0f} s: killed)")
    return Ran(child.returncode, out, err)


def _in_process(args: list[str], cwd: Path | None) -> Ran:
    from wisconsin.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    old_argv, old_cwd = sys.argv, os.getcwd()
    try:
        sys.argv = ["wisconsin", *args]
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except Exception:  # what Python would print on the way out
                err.write(traceback.format_exc())
                code = 1
    finally:
        sys.argv = old_argv
        os.chdir(old_cwd)
    return Ran(code, out.getvalue(), err.getvalue())


# --------------------------------------------------------------------------- judging


def tree(root: Path) -> dict[str, tuple]:
    """Every path under root and root itself (symlinks not followed): (size or "dir",
    mtime). Directories' mtimes too: a file made and removed in one moves it."""
    snap = {".": ("dir", root.stat().st_mtime_ns)}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            st = (Path(dirpath) / name).lstat()
            size = "dir" if name in dirs else st.st_size
            snap[os.path.relpath(Path(dirpath) / name, root)] = (size, st.st_mtime_ns)
    return snap


def changes(before: dict, after: dict) -> tuple[list[str], list[str]]:
    """What differs: '+path' created, '-path' removed, '~path' a file changed; and apart,
    the directories whose entries are the same but whose mtime moved (a file made and
    removed again in them, e.g. a lock taken and released)."""
    moved = [p for p in before.keys() & after.keys() if before[p] != after[p]]
    touched = sorted(
        [f"+{p}" for p in after.keys() - before.keys()]
        + [f"-{p}" for p in before.keys() - after.keys()]
        + [f"~{p}" for p in moved if before[p][0] != "dir"]
    )
    return touched, sorted(p for p in moved if before[p][0] == "dir")


@dataclass(frozen=True)
class Verdict:
    traceback: bool
    ignored: bool  # exit 0 where a refusal is due
    wrong_exit: bool  # neither 0 nor 2 where 2 is due, or not 0 where 0 is
    wrong_message: bool  # the output misses what it must name, or says what it must not
    not_one_line: bool  # a refusal that is not exactly one line, on stderr
    touched: tuple[str, ...]  # what a refusal created, changed or removed

    @property
    def ok(self) -> bool:
        return not (
            self.traceback
            or self.ignored
            or self.wrong_exit
            or self.wrong_message
            or self.not_one_line
            or self.touched
        )


def judge(case: Case, ran: Ran, touched: list[str], paths: dict[str, Path]) -> Verdict:
    text = ran.stdout + ran.stderr
    said = all(s.lower() in text.lower() for s in case.said(paths))
    said = said and not (case.never and re.search(case.never, text))
    if not case.refused:
        return Verdict("Traceback" in text, False, ran.code != 0, not said, False, ())
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return Verdict(
        traceback="Traceback" in text,
        ignored=ran.code == 0,
        wrong_exit=ran.code not in (0, 2),
        wrong_message=not said,
        not_one_line=len(lines) != 1 or bool(ran.stdout.strip()),
        touched=tuple(touched),
    )


def first_line(ran: Ran) -> str:
    """What a user reads first: the error line, or a traceback's last line."""
    lines = [ln for ln in (ran.stderr + ran.stdout).splitlines() if ln.strip()]
    if "Traceback" in ran.stderr:
        return [ln for ln in lines if not ln.startswith(" ")][-1]
    return lines[0] if lines else ""
