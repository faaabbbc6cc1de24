"""Do the partitions' peer ports take every terminal's link? (issue 31, 2026-11-27)

Usage: python benchmarks/debitcredit_peer_links.py [--steps 8] [--seconds 10]
       [--remote 1.0,0.15] [--branches 10] [--dir D]

Terminals, and so their links to the other partition, live one step: at each step's start
every terminal of every partition connects to its peers at once. With multiprocessing's
default listen backlog of 1 the kernel dropped some of those connections, and a terminal
whose ACK it dropped after a syncookie waited for the handshake forever, so its step never
ended. This runs --steps pinned P = 2 closed steps (each after the harness's two 2 s warm-up
steps, which open their own links) per --remote share and prints, per step, the delivered
tps and the kernel's TcpExt ListenOverflows, ListenDrops and SyncookiesSent counters' growth
(/proc/net/netstat: system-wide, so the machine should be otherwise quiet). A step that hangs
ends at the coordinator's timeout and is counted as hung.

To see the old port, run this file against an older checkout:
PYTHONPATH=<checkout of baed93a> python benchmarks/debitcredit_peer_links.py
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
sys.path.append(_here)  # last: the sibling script imports, nothing installed is shadowed

from debitcredit_scaleup import harness  # noqa: E402

import wisconsin  # noqa: E402
from wisconsin.workloads.debitcredit import schema  # noqa: E402
from wisconsin.workloads.debitcredit.coordinator import pinned_cores  # noqa: E402

COUNTERS = ("ListenOverflows", "ListenDrops", "SyncookiesSent")


def tcp_counters() -> dict[str, int]:
    """The kernel's TcpExt counters named in COUNTERS."""
    lines = [line.split() for line in Path("/proc/net/netstat").read_text().splitlines()]
    for head, values in zip(lines[::2], lines[1::2], strict=True):
        if head[0] == "TcpExt:":
            got = dict(zip(head[1:], map(int, values[1:]), strict=True))
            return {name: got.get(name, 0) for name in COUNTERS}
    return dict.fromkeys(COUNTERS, 0)


def shares(text: str) -> list[float]:
    """--remote: comma-separated shares in [0, 1]; argparse turns an error into one line."""
    try:
        got = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of numbers: {text!r}") from None
    if not all(0.0 <= x <= 1.0 for x in got):
        raise argparse.ArgumentTypeError(f"shares must be within 0 and 1: {text!r}")
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument(
        "--remote", type=shares, default="1.0,0.15", help="remote shares, 0-1, comma-separated"
    )
    ap.add_argument("--branches", type=int, default=10)
    ap.add_argument("--dir", type=Path, default=None)
    a = ap.parse_args()
    if len(pinned_cores(2)) < 2:
        sys.exit("needs 2 usable cores")
    root = Path(tempfile.mkdtemp(prefix="dc-links-", dir=a.dir))
    sizing = schema.Sizing(branches_per_partition=a.branches)
    src = Path(wisconsin.__file__).parent
    head = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(f"wisconsin from {src} (commit {head or 'unknown'})", flush=True)
    print(f"P = 2 pinned, {sizing.accounts(1):,} accounts per partition, 8 streams each; "
          f"{a.steps} steps of {a.seconds:g} s per remote share", flush=True)  # fmt: skip
    summary = []
    try:
        schema.build(root / "h2", 2, sizing)
        for share in a.remote:
            hung, grew = 0, dict.fromkeys(COUNTERS, 0)
            for step in range(a.steps):
                before, t0 = tcp_counters(), time.perf_counter()
                try:
                    rate, _ = harness(root / "h2", 2, sizing, a.seconds, share, 700 + step)
                    what = f"{rate:7.1f} tps"
                except wisconsin.WisconsinError as exc:
                    hung += 1
                    what = f"HUNG ({exc})"
                delta = {k: v - before[k] for k, v in tcp_counters().items()}
                for k in COUNTERS:
                    grew[k] += delta[k]
                print(f"remote {share:4.0%} step {step + 1}: {what}  "
                      + "  ".join(f"{k} +{v}" for k, v in delta.items())
                      + f"  ({time.perf_counter() - t0:.1f} s)", flush=True)  # fmt: skip
            summary.append(
                f"remote {share:4.0%}: {hung} of {a.steps} steps hung; "
                + ", ".join(f"{k} +{v}" for k, v in grew.items())
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print()
    for line in summary:
        print(line)


if __name__ == "__main__":
    sys.path.insert(0, _here)
    from _results import recorded

    with recorded("debitcredit-peer-links"):
        main()
