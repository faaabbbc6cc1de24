"""The whole fault suite of issue 29, each fault on its own copy of one table, and after each:
does `wisconsin info --deep` agree with an independent reader of the partition files?

The independent reader imports nothing of wisconsin: DuckDB alone attaches each partition
file read-only and compares both of its tables, row for row (EXCEPT ALL both ways), with the
same partition of a reference table generated once into a separate directory that no fault
touches. `info --deep` verdict: exit 0 and "verified". The two must agree before repair
(both see the damage, or both see none) and after (both see the table as generated). A
fault in the manifest must be refused by info while the reader finds the files as generated
(the manifest is then put back, as a user would, before repair and the second look).

Faults: bytes overwritten in a block; a partition file deleted; another partition's file
copied over one; the manifest's row count edited; a manifest partition file of
../../x.duckdb; a crafted table name in the manifest; kill -9 between an update and its undo
(tests/crash_child.py); two runs through a symlinked table at once; and a DebitCredit kill -9
of a partition and the coordinator (crash.py), repaired by `wisconsin repair`.

    python benchmarks/fault_suite_agreement.py --rows 20000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

ROOT = Path(__file__).resolve().parent.parent


def wisconsin(*args, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "wisconsin", *map(str, args)],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def independent_same(table: Path, reference: Path) -> tuple[bool, str]:
    """Every partition file of table holds exactly the rows of reference's (duckdb only)."""
    import duckdb

    files = sorted(reference.glob("part-*.duckdb"))
    for ref in files:
        mine = table / ref.name
        if not mine.is_file():
            return False, f"{ref.name} missing"
        con = duckdb.connect()
        try:
            con.execute(f"ATTACH '{mine}' AS t (READ_ONLY)")
            con.execute(f"ATTACH '{ref}' AS r (READ_ONLY)")
            for (name,) in con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = 'r'"
            ).fetchall():
                (diff,) = con.execute(
                    f"SELECT (SELECT count(*) FROM (FROM t.{name} EXCEPT ALL FROM r.{name})) + "
                    f"(SELECT count(*) FROM (FROM r.{name} EXCEPT ALL FROM t.{name}))"
                ).fetchone()
                if diff:
                    return False, f"{ref.name} {name}: {diff} rows differ"
        except duckdb.Error as exc:
            return False, f"{ref.name} unreadable: {str(exc).splitlines()[0][:80]}"
        finally:
            con.close()
    return True, f"{len(files)} files identical"


def info_ok(table: Path) -> tuple[bool, str]:
    r = wisconsin("info", "--deep", table)
    last = (r.stdout + r.stderr).strip().splitlines()[-1:] or [""]
    return r.returncode == 0 and "verified" in r.stdout, f"exit {r.returncode}: {last[0][:90]}"


def corrupt(t: Path) -> str:
    """Overwrite 4 KiB inside the first data block (after DuckDB's three 4 KiB headers): a
    block the table uses, so both readers must see it."""
    path = t / "part-001.duckdb"
    with open(path, "r+b") as f:
        f.seek(3 * 4096 + 8192)
        f.write(b"\xa5" * 4096)
    return "4 KiB overwritten in the first data block"


def delete(t: Path) -> str:
    (t / "part-000.duckdb").unlink()
    return "part-000.duckdb deleted"


def foreign(t: Path) -> str:
    shutil.copyfile(t / "part-000.duckdb", t / "part-001.duckdb")
    return "part-000 copied over part-001"


def _edit_manifest(t: Path, edit) -> dict:
    path = t / "manifest.json"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    return data


def manifest_rows(t: Path) -> str:
    _edit_manifest(t, lambda d: d["parts"][0].__setitem__("rows", d["parts"][0]["rows"] + 1))
    r = wisconsin("repair", t)
    return f"rows+1 in manifest; repair exit {r.returncode}"


def manifest_path(t: Path) -> str:
    _edit_manifest(t, lambda d: d["parts"][1].__setitem__("file", "../../x.duckdb"))
    r = wisconsin("run", "--data", t.parent, "--tables", "F", "--repeat", "1", "--quiet",
                  "--mode", "shared-memory", "--out", t.parent.parent / "runs")  # fmt: skip
    outside = (t.parent.parent / "x.duckdb").exists() or (t.parent / "x.duckdb").exists()
    return f"file ../../x.duckdb; run exit {r.returncode}, file outside written: {outside}"


def manifest_name(t: Path) -> str:
    evil = t.parent.parent / "pwned.csv"
    _edit_manifest(t, lambda d: d.__setitem__("name", f"F2 TO '{evil}'; --"))
    r = wisconsin("info", t)
    return f"crafted name; info exit {r.returncode}, COPY target written: {evil.exists()}"


def kill_between_update_and_undo(t: Path) -> str:
    child = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "crash_child.py"), "shared-memory", str(t),
         "between-update-and-undo"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        line = child.stdout.readline().strip()
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    time.sleep(0.3)
    return f"SIGKILL at '{line}'"


def symlink_double_run(t: Path) -> str:
    other = t.parent.parent / "other"
    other.mkdir()
    (other / "F2").symlink_to(t)
    cmd = ["run", "--tables", "F", "--repeat", "3", "--quiet", "--mode", "shared-memory"]
    first = subprocess.Popen(
        [sys.executable, "-m", "wisconsin", *cmd, "--data", str(t.parent),
         "--out", str(t.parent.parent / "runs-a")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and first.poll() is None:
        if (t / ".wisconsin.lock").exists() and (t / ".wisconsin.lock").stat().st_size:
            break  # the holder wrote its details: it holds the table
        time.sleep(0.05)
    second = wisconsin(*cmd, "--data", other, "--out", t.parent.parent / "runs-b")
    first.wait(timeout=600)
    lines = second.stderr.strip().count("\n") + 1
    return f"first exit {first.returncode}; second exit {second.returncode} in {lines} line(s)"


FAULTS = {
    "corrupt block": corrupt,
    "deleted partition": delete,
    "foreign partition": foreign,
    "manifest rows edited": manifest_rows,
    "manifest path outside": manifest_path,
    "manifest name as SQL": manifest_name,
    "kill -9 update/undo": kill_between_update_and_undo,
    "symlinked double run": symlink_double_run,
}
# Faults in the manifest are refused and never reach the files; the user puts the manifest back
MANIFEST_FAULTS = {"manifest rows edited", "manifest path outside", "manifest name as SQL"}


def debitcredit(work: Path) -> list[str]:
    from wisconsin.workloads.debitcredit import crash
    from wisconsin.workloads.debitcredit.check import independent_check

    r = crash.crash_test(work / "dc", partitions=2)  # kill -9, then what `repair` does
    db = work / "dc" / "dc2"
    info = wisconsin("info", db)
    ok, lines = independent_check(str(db))
    again = wisconsin("repair", db)
    return [
        f"debitcredit kill -9 (partition 1 + coordinator): {r.acknowledged_before_kill} "
        f"acknowledged before the kill, {r.recovered} remote half(s) applied by repair, "
        f"audit {'OK' if r.audit.ok else r.audit.problems}",
        f"  info exit {info.returncode} ({info.stdout.strip().splitlines()[-1][:70]}); "
        f"independent check {'OK' if ok else lines}; agree: {(info.returncode == 0) == ok}",
        f"  repair again: {again.stdout.strip()[:90]}",
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=20_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fault-suite-", dir=ROOT.parent) as tmp:
        work = Path(tmp)
        ref = work / "reference"
        r = wisconsin("generate", "--kind", "F", "--rows", args.rows, "--partitions", "2",
                      "--data", ref, "--quiet")  # fmt: skip
        assert r.returncode == 0, r.stderr
        pristine = ref / "F2"
        agree_all = True
        print(f"table F2 of {args.rows:,} rows; reference generated in a separate directory")
        print("fault | what happened | before repair: info --deep / reader | after: info / reader")
        for name, fault in FAULTS.items():
            case = work / name.replace(" ", "-").replace("/", "-")
            t = case / "data" / "F2"
            shutil.copytree(pristine, t, ignore=shutil.ignore_patterns(".wisconsin.lock"))
            what = fault(t)
            before = (info_ok(t), independent_same(t, pristine))
            if name in MANIFEST_FAULTS:
                shutil.copyfile(pristine / "manifest.json", t / "manifest.json")
            rep = wisconsin("repair", t)
            after = (info_ok(t), independent_same(t, pristine))
            if name in MANIFEST_FAULTS:  # refused, and the files as generated
                agree = not before[0][0] and before[1][0] and after[0][0] and after[1][0]
            else:
                agree = before[0][0] == before[1][0] and after[0][0] and after[1][0]
            agree_all &= agree
            print(
                f"{name} | {what} | {before[0][1]} / {before[1][1]} | repair exit "
                f"{rep.returncode}; {after[0][1]} / {after[1][1]} | agree: {agree}"
            )
        lines = debitcredit(work)
        print("\n".join(lines))
        agree_all &= "agree: True" in lines[1]
        healthy = work / "healthy" / "F2"
        shutil.copytree(pristine, healthy, ignore=shutil.ignore_patterns(".wisconsin.lock"))
        before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in healthy.iterdir()}
        rep = wisconsin("repair", healthy)
        after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in healthy.iterdir()}
        after.pop(".wisconsin.lock", None)
        unchanged = before == after
        print(
            f"repair on a healthy table: exit {rep.returncode}, "
            f"{len(rep.stdout.strip().splitlines())} line(s) ({rep.stdout.strip()[-60:]}); "
            f"inodes and mtimes unchanged: {unchanged}"
        )
        ok = agree_all and unchanged and rep.returncode == 0
        print(f"goal: info --deep and the independent reader agree after every fault: "
              f"{'met' if ok else 'NOT met'}")  # fmt: skip
        return 0 if ok else 1


if __name__ == "__main__":
    with recorded("fault-suite-agreement"):
        sys.exit(main())
