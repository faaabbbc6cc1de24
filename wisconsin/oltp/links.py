"""The partition servers' sockets: where they listen and how they reach each other.

On one machine (the default) a server listens on loopback with multiprocessing's
Listener and Client, as it always has. On a cluster (`configure(host, tls)`, set once by
the process's entry, wisconsin.oltp.hosted) it listens on its worker's own address and
every link, peer or control, is a socket of this module: authenticated with the run's key
by multiprocessing's challenge, wrapped in TLS when the cluster uses TLS (the cluster's own
CA, certificate and key), and a connect that gets no answer fails within CONNECT_TIMEOUT_S.
"""

from __future__ import annotations

import contextlib
import pickle
import select
import socket
import ssl
import struct
from dataclasses import dataclass
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Listener, answer_challenge, deliver_challenge

CONNECT_TIMEOUT_S = 5.0
HANDSHAKE_TIMEOUT_S = 10.0
_HEADER = struct.Struct("!Q")


@dataclass(frozen=True)
class Tls:
    """The PEM files of a TLS cluster: CA bundle, this node's certificate and key."""

    ca: str
    cert: str
    key: str

    def context(self, server: bool) -> ssl.SSLContext:
        """Both ends present certificates signed by the CA (as Dask's TLS does); no
        hostname check: the nodes share one certificate, like the cluster's."""
        purpose = ssl.Purpose.CLIENT_AUTH if server else ssl.Purpose.SERVER_AUTH
        ctx = ssl.create_default_context(purpose, cafile=self.ca)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_cert_chain(self.cert, self.key)
        return ctx


@dataclass(frozen=True)
class Net:
    """Where this process listens; None host: loopback with multiprocessing's own sockets."""

    host: str | None = None
    tls: Tls | None = None


_net = Net()


def configure(host: str, tls: Tls | None) -> None:
    """This process serves a cluster: listen on host, links over TLS when tls is given."""
    global _net
    _net = Net(host, tls)


def current() -> Net:
    return _net


def on_cluster() -> bool:
    return _net.host is not None


class SocketConnection:
    """A multiprocessing-like connection (send/recv of pickled objects, send_bytes,
    recv_bytes, poll, fileno) over a plain or TLS socket, framed by an 8-byte length."""

    def __init__(self, sock: socket.socket):
        self._sock = sock

    def fileno(self) -> int:
        return self._sock.fileno()

    def send_bytes(self, buf: bytes) -> None:
        self._sock.sendall(_HEADER.pack(len(buf)) + bytes(buf))

    def recv_bytes(self, maxlength: int | None = None) -> bytes:
        (n,) = _HEADER.unpack(self._exactly(_HEADER.size))
        if maxlength is not None and n > maxlength:
            raise OSError(f"a message of {n} bytes where at most {maxlength} were expected")
        return self._exactly(n)

    def _exactly(self, n: int) -> bytes:
        buf = bytearray(n)
        view, got = memoryview(buf), 0
        while got < n:
            k = self._sock.recv_into(view[got:], n - got)
            if not k:
                raise EOFError("the connection was closed")
            got += k
        return bytes(buf)

    def send(self, obj) -> None:
        self.send_bytes(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))

    def recv(self):
        return pickle.loads(self.recv_bytes())

    def poll(self, timeout: float | None = 0.0) -> bool:
        # TLS may hold a decrypted record already: select would not see it
        if isinstance(self._sock, ssl.SSLSocket) and self._sock.pending():
            return True
        return bool(select.select([self._sock], [], [], timeout)[0])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()


class SocketListener:
    """A listener on (host, any port) whose accept() authenticates like multiprocessing's."""

    def __init__(self, host: str, authkey: bytes, tls: Tls | None, backlog: int):
        self._authkey = authkey
        self._ctx = tls.context(server=True) if tls else None
        self._sock = socket.create_server((host, 0), backlog=backlog)
        self.address = self._sock.getsockname()[:2]

    def accept(self, timeout: float | None = None) -> SocketConnection:
        """The next authenticated connection (OSError: none within timeout, or refused)."""
        self._sock.settimeout(timeout)
        sock, _ = self._sock.accept()
        try:
            sock.settimeout(HANDSHAKE_TIMEOUT_S)  # a silent client does not hold the loop
            if self._ctx is not None:
                sock = self._ctx.wrap_socket(sock, server_side=True)
            conn = SocketConnection(sock)
            deliver_challenge(conn, self._authkey)
            answer_challenge(conn, self._authkey)
            sock.settimeout(None)
        except (AuthenticationError, ssl.SSLError, OSError, EOFError) as exc:
            sock.close()
            raise OSError(f"a connection refused: {exc}") from None
        _nodelay(sock)
        return conn

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()


def _nodelay(sock: socket.socket) -> None:
    # one small message each way per remote half: Nagle would hold it for the ACK
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def listen(authkey: bytes, backlog: int):
    """This process's listener: loopback (multiprocessing's) or its cluster address."""
    if _net.host is None:
        return Listener(("127.0.0.1", 0), authkey=authkey, backlog=backlog)
    return SocketListener(_net.host, authkey, _net.tls, backlog)


def connect(address, authkey: bytes, timeout: float = CONNECT_TIMEOUT_S):
    """A link to address: multiprocessing's Client on one machine; on a cluster, a socket
    that fails within timeout (OSError) when nothing answers."""
    if _net.host is None:
        return Client(tuple(address), authkey=authkey)
    return dial(tuple(address), authkey, _net.tls, timeout)


def dial(address: tuple, authkey: bytes, tls: Tls | None, timeout: float) -> SocketConnection:
    """An authenticated (and with tls, encrypted) connection to a SocketListener."""
    sock = socket.create_connection(address, timeout=timeout)
    try:
        if tls is not None:
            sock = tls.context(server=False).wrap_socket(sock)
        conn = SocketConnection(sock)
        answer_challenge(conn, authkey)
        deliver_challenge(conn, authkey)
    except (AuthenticationError, ssl.SSLError, EOFError) as exc:
        sock.close()
        why = str(exc) or "it closed the connection"
        raise OSError(f"{address[0]}:{address[1]} refused the link: {why}") from None
    except BaseException:
        sock.close()
        raise
    sock.settimeout(None)
    _nodelay(sock)
    return conn
