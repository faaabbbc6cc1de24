"""A direct socket from the shared-nothing coordinator to each partition's worker, for the
timed statements: one request and one answer per statement (~0.1 ms) instead of a pinned
Dask task (~15-25 ms at P = 2 on two cores, most of a short query; docs/performance.md).

Dask still starts the workers, places the partitions, recovers interrupted updates and
watches for dead workers; a channel carries calls of worker.py's task functions
(worker.DIRECT: the timed statements, the untimed work around them in a step, opening and
closing a table), run in the worker against the same sessions, serialised with its Dask
tasks by a lock there.

The socket is plain TCP (multiprocessing.connection framing, pickled messages) with the
HMAC handshake of an authkey the coordinator made and sent through Dask: authenticated,
not encrypted. A TLS cluster keeps the Dask path (SharedNothingEngine decides).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import threading
import time
from collections.abc import Callable, Mapping
from multiprocessing import connection as mpc

from wisconsin import WisconsinError

POLL_S = 1.0  # how often a waiting coordinator asks whether a slow partition's worker lives


class ChannelLost(WisconsinError):
    """The connection to a worker dropped (it died, or closed its end)."""


def _nodelay(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # not TCP (a test's socketpair): nothing to tune
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _shutdown(conn: mpc.Connection) -> None:
    """Wake a thread blocked reading conn (close alone does not, on Linux)."""
    with contextlib.suppress(OSError, ValueError):
        s = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            s.shutdown(socket.SHUT_RDWR)
        finally:
            s.close()


# --------------------------------------------------------------------------- worker side


class Server:
    """Listens on (host, a free port); each connection gets a thread that answers
    (name, args) with ("ok", functions[name](*args)) or ("err", exception)."""

    def __init__(
        self,
        host: str,
        authkey: bytes,
        functions: Mapping[str, Callable],
        on_thread: Callable[[], None] | None = None,
    ):
        self.authkey = authkey
        self.functions = dict(functions)
        self.on_thread = on_thread
        family = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)[0][0]
        self.sock = socket.create_server((host, 0), family=family)
        self.address: tuple[str, int] = self.sock.getsockname()[:2]
        self.conns: set[mpc.Connection] = set()
        self.running: dict[int, str] = {}  # thread id -> the call it is inside (a test hook)
        self._guard = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, name="wisconsin-channel", daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                s, _ = self.sock.accept()
            except OSError:
                return  # closed
            s.setblocking(True)
            _nodelay(s)
            conn = mpc.Connection(s.detach())
            with self._guard:
                if self.closed:
                    conn.close()
                    return
                self.conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: mpc.Connection) -> None:
        try:
            if self.on_thread is not None:
                self.on_thread()
            mpc.deliver_challenge(conn, self.authkey)
            mpc.answer_challenge(conn, self.authkey)
            while True:
                name, args = conn.recv()
                try:
                    if name not in self.functions:
                        raise LookupError(f"{name} is not served over the direct channel")
                    self.running[threading.get_ident()] = name
                    answer = ("ok", self.functions[name](*args))
                except BaseException as exc:  # noqa: BLE001 - the caller gets it, as from Dask
                    answer = ("err", exc)
                finally:
                    self.running.pop(threading.get_ident(), None)
                try:
                    conn.send(answer)
                except (pickle.PicklingError, TypeError, AttributeError) as exc:
                    # send pickles before writing: nothing of the answer went out
                    what = answer[1] if answer[0] == "err" else exc
                    conn.send(("err", RuntimeError(f"{type(what).__name__}: {what}")))
        except (EOFError, OSError, mpc.AuthenticationError):
            pass  # the coordinator closed its end (or was not one of ours)
        finally:
            with self._guard:
                self.conns.discard(conn)
            conn.close()

    def close(self) -> None:
        with self._guard:
            self.closed = True
            conns = list(self.conns)
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes accept()
        self.sock.close()
        for conn in conns:
            _shutdown(conn)  # its thread sees EOF and closes it


# --------------------------------------------------------------------------- coordinator side


class Link:
    """The coordinator's connection to one partition's worker."""

    def __init__(self, address: tuple[str, int], authkey: bytes, timeout_s: float = 30.0):
        self.address = tuple(address)
        s = socket.create_connection(self.address, timeout=timeout_s)
        s.setblocking(True)
        _nodelay(s)
        self.conn: mpc.Connection | None = mpc.Connection(s.detach())
        try:
            if not self.conn.poll(timeout_s):
                raise TimeoutError(f"no handshake from {self.address} within {timeout_s:.0f} s")
            mpc.answer_challenge(self.conn, authkey)
            mpc.deliver_challenge(self.conn, authkey)
        except BaseException:
            self.close()
            raise

    @property
    def broken(self) -> bool:
        return self.conn is None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def call_all(
    links: Mapping[int, Link],
    requests: Mapping[int, tuple[str, tuple]],
    timeout_s: float,
    check: Callable[[list[int]], Mapping[int, BaseException]] | None = None,
    poll_s: float = POLL_S,
) -> tuple[dict[int, object], dict[int, BaseException]]:
    """Send every partition its request, then collect the answers (the partitions work in
    parallel): ({part: result}, {part: exception}). Bounded by timeout_s. A dropped
    connection fails its partition at once (ChannelLost); while answers are slow, check
    (the pending partitions -> {part: why}) runs every poll_s to fail partitions whose
    worker is known gone. A link that did not answer is closed: a late answer must not be
    read as the next call's."""
    deadline = time.monotonic() + timeout_s
    out: dict[int, object] = {}
    failed: dict[int, BaseException] = {}
    pending: dict[mpc.Connection, int] = {}

    def lose(part: int, exc: BaseException) -> None:
        failed[part] = exc
        links[part].close()

    try:
        for part, request in requests.items():
            link = links[part]
            if link.broken:
                failed[part] = ChannelLost("the connection to its worker was closed")
                continue
            try:
                link.conn.send(request)
            except (OSError, ValueError) as exc:
                lose(part, ChannelLost(f"the connection to its worker was lost ({exc})"))
                continue
            pending[link.conn] = part
        while pending:
            left = deadline - time.monotonic()
            if left <= 0:
                for part in pending.values():
                    lose(part, TimeoutError(f"no answer within {timeout_s:.0f} s"))
                pending.clear()
                break
            ready = mpc.wait(list(pending), timeout=min(poll_s, left))
            for conn in ready:
                part = pending.pop(conn)
                try:
                    status, value = conn.recv()
                except (EOFError, OSError) as exc:
                    why = f" ({exc})" if str(exc) else ""
                    lose(part, ChannelLost(f"the connection to its worker was lost{why}"))
                    continue
                if status == "ok":
                    out[part] = value
                else:
                    failed[part] = value
            if not ready and pending and check is not None:
                for part, exc in check(sorted(pending.values())).items():
                    pending.pop(links[part].conn, None)
                    lose(part, exc)
    except BaseException:
        for part in pending.values():  # ^C mid-wait: their answers are still coming
            links[part].close()
        raise
    return out, failed
