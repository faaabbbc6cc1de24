"""System time of a whole build as a user runs it: issue 13's own case, from the command line.

Usage: python benchmarks/build_system_time.py [--rows 8000000] [--partitions 1,2] [--repeat 5]
                                              [--page-reporting-order 9,10] [--dir DIR]

Each round runs `wisconsin generate --kind F --rows R --partitions P --quiet` into a
fresh data directory (removed afterwards) and measures, for that process and every builder it
spawned (getrusage of the reaped children): wall, user and system CPU seconds, minor page faults.
It also reads how much freed memory the kernel handed back to the host during the round (Linux
free page reporting, /sys/module/page_reporting/parameters/reported_kib), and prints how long
the machine has been up: a VM's first touches of memory after boot cost the host more.

--page-reporting-order A,B (root only; diagnostic) interleaves rounds with the kernel's
page_reporting_order set to each value in turn (10 reports only 4 MiB free blocks, i.e.
almost nothing on this machine) and restores the value it found, so the share of system time
due to the host taking freed memory back can be measured. The tool itself never changes it.

Goal (issue 13): system time below 25% of user time during a build (median over rounds).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

# run as a script, this file's directory is sys.path[0]; keep it from shadowing packages
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_spec = importlib.util.spec_from_file_location("_ltr", os.path.join(_here, "larger_than_ram.py"))
_ltr = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ltr)  # one measured_child for the benchmarks that run the CLI

from wisconsin.measure.environment import PAGE_REPORTING  # noqa: E402

SYS_GOAL = 0.25
REPORTED_KIB = Path(PAGE_REPORTING)
ORDER_FILE = REPORTED_KIB.with_name("page_reporting_order")


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def uptime_min() -> float | None:
    try:
        return float(Path("/proc/uptime").read_text().split()[0]) / 60
    except (OSError, ValueError, IndexError):
        return None


def one_build(root: Path, rows: int, partitions: str, seed: int) -> dict:
    """Run `wisconsin generate` once; its and its builders' times, faults, bytes reported."""
    d = Path(tempfile.mkdtemp(dir=root))
    cmd = [_ltr._wisconsin(), "generate", "--kind", "F", "--rows", str(rows)]
    cmd += ["--partitions", partitions, "--seed", str(seed), "--data", str(d / "data"), "--quiet"]
    reported0 = _read_int(REPORTED_KIB)
    try:
        r = _ltr.measured_child(cmd)
        reported1 = _read_int(REPORTED_KIB)
        written = sum(f.stat().st_size for f in (d / "data").rglob("*.duckdb"))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return r | {
        "reported_mb": None
        if reported0 is None or reported1 is None
        else (reported1 - reported0) / 1024,
        "bytes": written,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8_000_000, help="F table rows (issue 13: 8 M)")
    ap.add_argument("--partitions", default="1,2", help="partition counts (issue 13: 1,2)")
    ap.add_argument("--repeat", type=int, default=5, help="rounds per setting")
    ap.add_argument("--seed", type=int, default=1989)
    ap.add_argument(
        "--page-reporting-order",
        default=None,
        help="diagnostic, root only: interleave rounds with these page_reporting_order values",
    )
    ap.add_argument("--dir", default=None, help="where the builds write (default: system temp)")
    args = ap.parse_args()
    order_file = ORDER_FILE
    orders: list[str | None] = [None]
    if args.page_reporting_order:
        if not os.access(order_file, os.W_OK):
            ap.error(f"--page-reporting-order needs a writable {order_file} (root, Linux)")
        orders = [o.strip() for o in args.page_reporting_order.split(",") if o.strip()]
        if not orders or not all(o.isdigit() for o in orders):
            ap.error("--page-reporting-order takes comma-separated page orders, e.g. 9,10")
    found = order_file.read_text().strip() if order_file.exists() else None
    root = Path(args.dir or tempfile.gettempdir())
    up = uptime_min()
    print(
        f"build system time: wisconsin generate --kind F --rows {args.rows:,} --partitions "
        f"{args.partitions}, {args.repeat} round(s) per setting, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}, machine up "
        f"{'?' if up is None else f'{up:.0f}'} min, page_reporting_order {found}"
    )
    print(
        f"  {'setting':10s} {'wall s':>7s} {'user s':>7s} {'sys s':>7s} {'sys/user':>8s}"
        f" {'faults k':>8s} {'to host MB':>10s} {'files GB':>8s}"
    )
    results: dict[str, list[dict]] = {}
    try:
        for _ in range(args.repeat):
            for order in orders:
                if order is not None:
                    try:
                        order_file.write_text(f"{order}\n")
                    except OSError as exc:  # e.g. an order the kernel refuses
                        sys.exit(f"cannot set {order_file} to {order}: {exc.strerror or exc}")
                name = "as found" if order is None else f"order {order}"
                r = one_build(root, args.rows, args.partitions, args.seed)
                results.setdefault(name, []).append(r)
                host = "-" if r["reported_mb"] is None else f"{r['reported_mb']:.0f}"
                print(
                    f"  {name:10s} {r['wall']:7.2f} {r['user']:7.2f} {r['sys']:7.2f}"
                    f" {r['sys'] / r['user']:8.0%} {r['minflt'] / 1000:8.0f} {host:>10s}"
                    f" {r['bytes'] / 1e9:8.2f}",
                    flush=True,
                )
    finally:
        if found is not None and orders != [None]:
            order_file.write_text(f"{found}\n")
    print("  medians (min-max):")
    for name, rs in results.items():
        ratios = [r["sys"] / r["user"] for r in rs]
        med = statistics.median(ratios)
        print(
            f"  {name:10s} wall {statistics.median(r['wall'] for r in rs):.2f} s, user "
            f"{statistics.median(r['user'] for r in rs):.2f} s, sys "
            f"{statistics.median(r['sys'] for r in rs):.2f} s, sys/user {med:.0%} "
            f"({min(ratios):.0%}-{max(ratios):.0%})"
        )
        verdict = "met" if med < SYS_GOAL else "NOT met"
        print(f"    goal: build system time < {SYS_GOAL:.0%} of user time: {med:.0%} -> {verdict}")


if __name__ == "__main__":
    with recorded("build-system-time"):
        main()
