"""Starts one server process per partition, wires their peer ports, runs steps on all at once."""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import secrets
import time
from collections.abc import Callable
from multiprocessing import connection
from pathlib import Path

from wisconsin import interrupts
from wisconsin.oltp.failures import PartitionLost, RunFailed, how_it_ended, storage_line

START_TIMEOUT_S = 60.0
# A process whose pipe ended is waited for this long, so its exit status is the real one
# (a kill -9 read at once was "code None").
EXIT_WAIT_S = 5.0
# A partition that failed because a peer vanished: how long to look for that peer's death.
DEATH_GRACE_S = 0.5


def pinned_cores(partitions: int) -> tuple[int, ...]:
    """The core each partition is pinned to: the p-th usable core, when there is one per
    partition; () when P exceeds the usable cores (oversubscribed: nothing pinned)."""
    usable = sorted(os.sched_getaffinity(0))
    return tuple(usable[:partitions]) if partitions <= len(usable) else ()


class PartitionServers:
    """P partition processes (spawned: DuckDB is not fork-safe), used as a context manager.

    target(*args(p, authkey, ctrl, core)) is each process's entry (node.serve underneath);
    label names the workload in its lines ("DebitCredit partition 1 (pid ...) ...")."""

    def __init__(
        self,
        paths,
        log_dir,
        target: Callable,
        args: Callable,
        label: str,
        pin: bool = False,
        hosts=None,
    ):
        self.partitions = len(paths)
        # on a cluster (hosts: oltp.hosted.Hosts) each partition has a worker of its own
        self.hosts = hosts
        # pin: partition p on the p-th usable core when P is at most the cores (else none)
        self.cores = pinned_cores(self.partitions) if pin and hosts is None else ()
        self.paths = [Path(p) for p in paths]
        self.log_dir = Path(log_dir)
        self.target, self.args, self.label = target, args, label
        self.procs: list = []
        self.ctrls: list = []
        self.pids: list[int] = []

    def __enter__(self):
        if self.hosts is not None:
            try:
                self.hosts.enter(self)
            except BaseException as exc:
                self.__exit__(type(exc), exc, None)
                raise
            return self
        self.log_dir.mkdir(parents=True, exist_ok=True)
        ctx = mp.get_context("spawn")
        authkey = secrets.token_bytes(16)
        try:
            for p in range(self.partitions):
                mine, theirs = ctx.Pipe()
                core = self.cores[p] if self.cores else None
                proc = ctx.Process(
                    target=self.target,
                    args=self.args(p, authkey, theirs, core),
                    name=f"{self.label.lower().replace('-', '')}-p{p}",
                )
                # serve() then ignores ^C; a ^C meanwhile is raised on leaving, with the
                # process already where __exit__ stops it
                with interrupts.deferred():
                    proc.start()
                    self.procs.append(proc)
                    self.ctrls.append(mine)
                theirs.close()
            ready = self._gather(START_TIMEOUT_S, "its start")
            addresses = {p: address for p, (_, address, _pid) in enumerate(ready)}
            self.pids = [pid for _, _, pid in ready]
            pids = self.log_dir / "pids"
            try:
                pids.write_text(
                    "".join(f"{p} {pid}\n" for p, pid in enumerate(self.pids))
                    + f"coordinator {os.getpid()}\n"
                )
            except OSError as exc:
                exc = OSError(exc.errno, exc.strerror, str(pids))  # name the path
                raise RunFailed(
                    f"starting the {self.partitions} partitions: "
                    + storage_line(exc, "their pid file")
                ) from None
            self._send_all(("peers", addresses), "its start")
            self._gather(START_TIMEOUT_S, "its start")
        except BaseException as exc:
            self.__exit__(type(exc), exc, None)
            raise
        return self

    def step(self, load, timeout: float, during: str) -> list[dict]:
        """One step on every partition at once; the per-partition tallies."""
        self._send_all(("run", load), during)
        return self._gather(timeout, during)

    def _send_all(self, msg, during: str) -> None:
        for p, ctrl in enumerate(self.ctrls):
            try:
                ctrl.send(msg)
            except (OSError, EOFError):  # BrokenPipeError, ConnectionResetError: it is gone
                raise self._lost(p, during) from None

    def _gather(self, timeout: float, during: str) -> list:
        """Every partition's answer, waiting on all of them at once: a partition that dies
        (its pipe ends, its process ends) is named at once, whichever it is, not after the
        others' answers; one that answers "failed" stops the run with its reason."""
        deadline = time.monotonic() + timeout
        answers: dict[int, object] = {}
        waiting = dict(enumerate(self.ctrls))
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._lost(min(waiting), during, f"did not answer within {timeout:.0f} s")
            ends = self._sentinels(waiting)
            ready = connection.wait([*waiting.values(), *ends], timeout=left)
            for p, ctrl in list(waiting.items()):
                if ctrl not in ready:
                    continue
                try:
                    answer = ctrl.recv()
                except (EOFError, OSError):
                    raise self._lost(p, during) from None
                if isinstance(answer, tuple) and answer[0] == "failed":
                    raise self._failed(p, answer[1], during)
                answers[p] = answer
                del waiting[p]
            for sentinel, p in ends.items():
                if sentinel in ready and p in waiting and not waiting[p].poll():
                    raise self._lost(p, during)  # ended without a word
        return [answers[p] for p in range(self.partitions)]

    def _sentinels(self, waiting) -> dict:
        """{a handle that becomes ready when partition p's process ends: p} (on a cluster,
        none: its control link's end says it)."""
        if self.hosts is not None:
            return {}
        return {self.procs[p].sentinel: p for p in waiting}

    def log_dir_of(self, p: int) -> Path:
        """Where partition p's process logs (one directory here; its host's on a cluster)."""
        return self.log_dir if self.hosts is None else self.hosts.log_dirs[p]

    def _failed(self, p: int, why: str, during: str) -> RunFailed:
        """Partition p's own reason, unless another one died meanwhile: a death is the
        cause, and what the others saw of it (a peer gone) its consequence."""
        deadline = time.monotonic() + DEATH_GRACE_S
        while time.monotonic() < deadline:
            for q, proc in enumerate(self.procs):
                if q != p and proc.exitcode not in (None, 0, 1):
                    return self._lost(q, during)
            time.sleep(0.02)
        return RunFailed(
            f"{self.label} partition {p} ({self._where(p)}) failed during {during}: "
            f"{why}; the run stops, nothing of this step is kept{self._repair_hint()}"
        )

    def _where(self, p: int) -> str:
        if self.hosts is not None:
            return f"on {self.hosts.places[p]}, pid {self.pids[p] if self.pids else '?'}"
        return f"pid {self.procs[p].pid}"

    def _lost(self, p: int, during: str, how: str | None = None) -> PartitionLost:
        """One line for partition p's end: its pid and how it ended (its real exit status:
        it is waited for briefly, so a kill -9 reads as the signal, not as no code yet)."""
        if self.hosts is not None:
            return self.hosts.lost(self, p, during, how)
        proc = self.procs[p]
        proc.join(timeout=EXIT_WAIT_S)
        if proc.exitcode is not None:
            how = f"{how_it_ended(proc.exitcode)} during {during}" + (f" ({how})" if how else "")
        else:  # alive but mute: it is stopped with the others anyway; say so
            proc.kill()
            proc.join(timeout=EXIT_WAIT_S)
            how = f"{how or 'stopped answering'} during {during} and was stopped with SIGKILL"
        return PartitionLost(
            f"{self.label} partition {p} (pid {proc.pid}) {how}; the run stops"
            + self._repair_hint()
        )

    def _repair_hint(self) -> str:
        if self.hosts is not None and self.hosts.repair:
            return f"; `{self.hosts.repair}` finishes what it left decided"
        db_dir = self.paths[0].parent
        return f"; `wisconsin repair {db_dir}` finishes what it left decided"

    def __exit__(self, exc_type=None, *exc) -> None:
        if self.hosts is not None:
            self.hosts.exit(self, exc_type is not None)
            return
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
