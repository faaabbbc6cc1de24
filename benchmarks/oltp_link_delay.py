"""How DebitCredit's remote transactions move with the interconnect's latency (issue 47).

Usage: python benchmarks/oltp_link_delay.py [--quick] [--rounds 5] [--seconds 8]
       [--delays 0,0.5,2,10] [--branches 4] [--streams 2] [--remote 0.5] [--dir D]

Reference 003's argument, measured: remote warehouses were cheap there because the
interconnect's latency was microseconds. This kernel has no tc netem, so a delaying TCP
relay does it: the script starts the tests' namespace cluster (TLS; a scheduler and two
workers on separate simulated hosts), one DebitCredit partition server per worker (as
`bench --workload debitcredit --cluster` does), and one relay per directed peer link in the
coordinator's namespace, which holds every chunk it forwards for --delays milliseconds in
each direction (a round trip gains twice that). Between steps the servers are rewired to
talk directly or through the relays (each server times its links again: the round trips in
the table are theirs), and each configuration runs one closed step per round, in an order
shuffled per round: "direct" (no relay) and each delay, 0 ms first among them measuring the
relay's own cost.

Per configuration (medians over rounds): the links' round trip, the remote share, the mean
response time of local and of distributed transactions, the extra per remote half (their
difference), its growth over the relay at 0 ms against what the delay predicts, and the
delivered tps. A distributed transaction crosses the link twice in sequence (prepare and
its answer, then commit and its acknowledgement) but the prepare overlaps the home half, so
the prediction is two added round trips, less at most one when the home half is longer.
After the steps the hosts' audit and independent check run on the partitions.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import random
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))
# run as a script, this file's directory is sys.path[0]; the namespace harness is the tests'
sys.path.append(os.path.join(os.path.dirname(_here), "tests"))

from harness.netns import NetnsCluster, cleanup_stale, make_tls_files  # noqa: E402
from wisconsin.oltp import histogram, hosted  # noqa: E402
from wisconsin.workloads.debitcredit import hosts, interconnect, schema  # noqa: E402
from wisconsin.workloads.debitcredit.coordinator import PartitionServers  # noqa: E402
from wisconsin.workloads.debitcredit.driver import Load  # noqa: E402

PARTITIONS = 2
CHUNK = 65536


class Relay:
    """A TCP relay: connections to .address are forwarded to target, each chunk held
    delay_s (settable between steps) in each direction."""

    def __init__(self, host: str, target: tuple):
        self.target = target
        self.delay_s = 0.0
        self.sock = socket.create_server((host, 0), backlog=256)
        self.address = self.sock.getsockname()[:2]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self.sock.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.target, timeout=5)
            except OSError:
                down.close()
                continue
            up.settimeout(None)
            for s in (down, up):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._pump(down, up)
            self._pump(up, down)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        held: queue.Queue = queue.Queue()

        def read() -> None:
            while True:
                try:
                    data = src.recv(CHUNK)
                except OSError:
                    data = b""
                held.put((time.perf_counter() + self.delay_s, data))
                if not data:
                    return

        def write() -> None:
            while True:
                due, data = held.get()
                wait = due - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                try:
                    if not data:
                        dst.shutdown(socket.SHUT_WR)
                        return
                    dst.sendall(data)
                except OSError:
                    return

        threading.Thread(target=read, daemon=True).start()
        threading.Thread(target=write, daemon=True).start()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def one_step(servers, load: Load) -> dict:
    """One closed step: delivered tps, remote share, mean and p90 response times."""
    tallies = servers.run(load)
    every = histogram.merge([t["hist"] for t in tallies])
    remote = histogram.merge([t["remote_hist"] for t in tallies])

    class _Step:  # what interconnect.remote_cost reads
        hist = histogram.encode(every)
        remote_hist = histogram.encode(remote)

    cost = interconnect.remote_cost(_Step)
    return {
        "tps": sum(t["in_window"] for t in tallies) / load.duration_s,
        "share": cost.share,
        "local_ms": (cost.local_mean_s or 0.0) * 1e3,
        "remote_ms": (cost.remote_mean_s or 0.0) * 1e3,
        "remote_p90_ms": histogram.summarize(remote).p90 * 1e3,
        "retries": sum(t["retries"] for t in tallies),
        "failed": sum(t["failed"] for t in tallies),
    }


def median_rtt_ms(figures: dict) -> float:
    return statistics.median(f["rtt_s"] for row in figures.values() for f in row.values()) * 1e3


def run(args) -> int:
    work = Path(args.dir or tempfile.mkdtemp(prefix="oltp-link-delay-"))
    cleanup_stale()
    tls = make_tls_files(work / "tls")
    sizing = schema.Sizing(branches_per_partition=args.branches)
    configs = ["direct", *args.delays]
    rows: dict = {c: [] for c in configs}
    with NetnsCluster(PARTITIONS, work / "cluster", tls=tls) as cluster:
        target = hosted.target(
            cluster.scheduler_address, (str(tls.ca), str(tls.cert), str(tls.key))
        )
        with hosted.Session(target) as on:
            places = hosted.place(on.client, PARTITIONS, str(work / "coordinator"))
            built = on.on_each(
                places, hosts.task_build, lambda p: (places[p].root, p, PARTITIONS, sizing)
            )
            paths = [built[p]["path"] for p in range(PARTITIONS)]
            log_dirs = [schema.ack_log_dir(Path(x).parent) for x in paths]
            where = hosted.Hosts(on.client, places, target.tls, log_dirs)
            relays: dict = {}
            try:
                with PartitionServers(work / "dc", PARTITIONS, sizing, log_dirs[0], hosts=where,
                                      paths=paths) as servers:  # fmt: skip
                    for p in range(PARTITIONS):
                        for q, address in where.addresses.items():
                            if q != p:
                                relays[(p, q)] = Relay(cluster.client_ip, address)
                    for i in range(args.warmups):  # untimed: buffer pools and links warm
                        servers.run(Load("closed", 2.0, streams=args.streams, seed=90 + i))
                    for r in range(args.rounds):
                        order = list(configs)
                        random.Random(f"round-{r}").shuffle(order)
                        for c in order:
                            direct = c == "direct"
                            for relay in relays.values():
                                relay.delay_s = 0.0 if direct else c / 1e3
                            figures = where.rewire(
                                servers,
                                lambda p, q, a, direct=direct: a if direct or p == q else relays[(p, q)].address,
                            )  # fmt: skip
                            load = Load("closed", args.seconds, streams=args.streams,
                                        seed=1000 + 10 * r, remote_share=args.remote)  # fmt: skip
                            got = one_step(servers, load) | {"rtt_ms": median_rtt_ms(figures)}
                            rows[c].append(got)
                            name = c if direct else f"{c:g} ms"
                            print(f"round {r + 1} {name:>8}: rtt {got['rtt_ms']:.3f} ms, "
                                  f"{got['tps']:.1f} tps, local {got['local_ms']:.2f} ms, "
                                  f"remote {got['remote_ms']:.2f} ms ({got['share']:.1%})",
                                  flush=True)  # fmt: skip
            finally:
                for relay in relays.values():
                    relay.close()
            record = hosts.audit_on_hosts(on, places, paths)
    table(rows, args)
    print(f"audit after the steps: {'OK' if record.ok else 'VOID: ' + '; '.join(record.problems)}"
          f"; {record.independent[-1]}")  # fmt: skip
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if record.ok else 1


def table(rows: dict, args) -> None:
    def med(c, k):
        return statistics.median(x[k] for x in rows[c])

    base = 0.0
    print()
    print(f"P = {PARTITIONS}, {args.streams} closed streams per partition, remote share "
          f"{args.remote:g}, {args.rounds} round(s) of {args.seconds:g} s steps (medians); "
          f"delay = held per direction by the relay")  # fmt: skip
    head = ("config", "RTT ms", "+RTT ms", "tps", "remote", "local ms", "remote ms",
            "remote p90", "extra ms", "+extra ms", "predicted", "ratio")  # fmt: skip
    print("  ".join(f"{h:>10}" for h in head))
    rtt0 = med(0.0, "rtt_ms") if 0.0 in rows else med("direct", "rtt_ms")
    for c in rows:
        extra = med(c, "remote_ms") - med(c, "local_ms")
        if c == 0.0 or (c == "direct" and 0.0 not in rows):
            base = extra
    for c in rows:
        extra = med(c, "remote_ms") - med(c, "local_ms")
        added_rtt = med(c, "rtt_ms") - rtt0
        direct = c == "direct"
        predicted = 2 * added_rtt
        more = extra - base
        cells = [
            "direct" if direct else f"{c:g} ms", f"{med(c, 'rtt_ms'):.3f}", f"{added_rtt:+.3f}",
            f"{med(c, 'tps'):.1f}", f"{med(c, 'share'):.1%}", f"{med(c, 'local_ms'):.2f}",
            f"{med(c, 'remote_ms'):.2f}", f"{med(c, 'remote_p90_ms'):.1f}", f"{extra:.2f}",
            f"{more:+.2f}", "-" if direct or c == 0.0 else f"{predicted:.2f}",
            "-" if direct or c == 0.0 or not predicted else f"{more / predicted:.2f}",
        ]  # fmt: skip
        print("  ".join(f"{x:>10}" for x in cells))
    if "direct" in rows and 0.0 in rows:
        print(f"relay's own cost at 0 ms: round trip {med(0.0, 'rtt_ms') - med('direct', 'rtt_ms'):+.3f} ms, "
              f"extra per remote half {base - (med('direct', 'remote_ms') - med('direct', 'local_ms')):+.2f} ms, "
              f"tps {med(0.0, 'tps') - med('direct', 'tps'):+.1f}")  # fmt: skip
    print("predicted = 2 x the added round trip (prepare, then commit, each crossing the link "
          "once each way); ratio = +extra / predicted (1 round trip, 0.5, if the prepare "
          "hides under the home half)")  # fmt: skip
    with contextlib.suppress(OSError):
        print("load average (1, 5, 15 min):", " ".join(f"{x:.2f}" for x in os.getloadavg()))


def _delays(text: str) -> list[float]:
    try:
        out = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of milliseconds: {text!r}") from None
    if not out or any(d < 0 for d in out):
        raise argparse.ArgumentTypeError(f"delays must be at least 0 ms: {text!r}")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1 round of 3 s steps (a smoke check)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--delays", type=_delays, default=[0.0, 0.5, 2.0, 10.0])
    ap.add_argument("--branches", type=int, default=4)
    # few streams: the response time is the path's, not a queue for the cores
    ap.add_argument("--streams", type=int, default=2)
    ap.add_argument("--remote", type=float, default=0.5)
    ap.add_argument("--warmups", type=int, default=3)
    ap.add_argument("--dir", help="keep the cluster's files here (default: a temporary one)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.seconds, args.warmups = 1, 3.0, 1
    if os.geteuid() != 0:
        ap.error("needs root: the cluster is network namespaces")
    return run(args)


if __name__ == "__main__":
    sys.path.insert(0, _here)
    from _results import recorded

    with recorded("oltp-link-delay"):
        code = main()
    sys.exit(code)
