"""Starts one server process per partition, wires their peer ports, runs steps on all at once."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import secrets
from pathlib import Path

from wisconsin import WisconsinError, interrupts
from wisconsin.workloads.debitcredit import server
from wisconsin.workloads.debitcredit.driver import Load
from wisconsin.workloads.debitcredit.schema import Sizing, partition_file

START_TIMEOUT_S = 60.0


def pinned_cores(partitions: int) -> tuple[int, ...]:
    """The core each partition is pinned to: the p-th usable core, when there is one per
    partition; () when P exceeds the usable cores (oversubscribed: nothing pinned)."""
    usable = sorted(os.sched_getaffinity(0))
    return tuple(usable[:partitions]) if partitions <= len(usable) else ()


class PartitionServers:
    """P partition processes (spawned: DuckDB is not fork-safe), used as a context manager."""

    def __init__(
        self, data_dir, partitions: int, sizing: Sizing, log_dir, leave_open=False, pin=False
    ):
        self.partitions = partitions
        # pin: partition p on the p-th usable core when P is at most the cores (else none)
        self.cores = pinned_cores(partitions) if pin else ()
        self.leave_open = leave_open  # the old start-up's open result (server.last_txid)
        self.sizing = sizing
        self.paths = [partition_file(data_dir, p, partitions) for p in range(partitions)]
        self.log_dir = Path(log_dir)
        self.procs: list = []
        self.ctrls: list = []
        self.pids: list[int] = []

    def __enter__(self) -> PartitionServers:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        ctx = mp.get_context("spawn")
        authkey = secrets.token_bytes(16)
        try:
            for p, path in enumerate(self.paths):
                mine, theirs = ctx.Pipe()
                proc = ctx.Process(
                    target=server.serve,
                    args=(
                        p,
                        self.partitions,
                        self.sizing,
                        str(path),
                        str(self.log_dir),
                        authkey,
                        theirs,
                        self.leave_open,
                        self.cores[p] if self.cores else None,
                    ),
                    name=f"debitcredit-p{p}",
                )
                # serve() then ignores ^C; a ^C meanwhile is raised on leaving, with the
                # process already where __exit__ stops it
                with interrupts.deferred():
                    proc.start()
                    self.procs.append(proc)
                    self.ctrls.append(mine)
                theirs.close()
            addresses = {}
            for p, ctrl in enumerate(self.ctrls):
                _, address, pid = self._recv(p, ctrl, START_TIMEOUT_S)
                addresses[p] = address
                self.pids.append(pid)
            (self.log_dir / "pids").write_text(
                "".join(f"{p} {pid}\n" for p, pid in enumerate(self.pids))
                + f"coordinator {os.getpid()}\n"
            )
            for ctrl in self.ctrls:
                ctrl.send(("peers", addresses))
            for p, ctrl in enumerate(self.ctrls):
                self._recv(p, ctrl, START_TIMEOUT_S)
        except BaseException as exc:
            self.__exit__(type(exc), exc, None)
            raise
        return self

    def _recv(self, p: int, ctrl, timeout: float):
        if not ctrl.poll(timeout):
            raise WisconsinError(f"DebitCredit partition {p} did not answer within {timeout:.0f} s")
        try:
            return ctrl.recv()
        except EOFError:
            code = self.procs[p].exitcode
            raise WisconsinError(f"DebitCredit partition {p} exited (code {code})") from None

    def run(self, load: Load) -> list[dict]:
        """One step on every partition at once; the per-partition tallies."""
        for ctrl in self.ctrls:
            ctrl.send(("run", load))
        limit = load.duration_s + load.drain_s + 60.0
        return [self._recv(p, ctrl, limit) for p, ctrl in enumerate(self.ctrls)]

    def __exit__(self, exc_type=None, *exc) -> None:
        if exc_type is not None:  # interrupted or failed mid-step: do not wait for the step
            for proc in self.procs:
                proc.kill()
        for ctrl in self.ctrls:
            with contextlib.suppress(OSError, EOFError):
                ctrl.send(("stop",))
        for proc in self.procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for ctrl in self.ctrls:
            ctrl.close()
