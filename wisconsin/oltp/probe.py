"""Each link of a partition on a cluster, tried and measured before the first step.

A partition server on a cluster connects to every peer once at its start: a link that
cannot connect is one line naming both hosts (within links.CONNECT_TIMEOUT_S), and one that
does is timed: round trips of a small message (the size of a remote half's) and the
bandwidth of a few larger ones, echoed by the peer (twophase.serve_peer's "echo").
"""

from __future__ import annotations

import statistics
import time

from wisconsin.oltp import links

ROUND_TRIPS = 50
SMALL = b"x" * 64  # a prepare message is ~60-100 bytes pickled
BULK = b"x" * (1 << 20)
BULK_MESSAGES = 4


def peers(node, names: dict) -> tuple:
    """("ok", {peer: its link's figures}) or ("failed", one line naming both hosts).
    names: partition -> "host (worker)" of every partition, this one's too."""
    out = {}
    me = names.get(node.part, f"partition {node.part}")
    for q, address in sorted(node.peers.items()):
        if q == node.part:
            continue
        where = f"{address[0]}:{address[1]}"
        try:
            conn = links.connect(address, node.authkey)
        except OSError as exc:
            return (
                "failed",
                f"partition {node.part} on {me} cannot connect to partition {q} on "
                f"{names.get(q, '?')} at {where}: {_why(exc)} (timeout "
                f"{links.CONNECT_TIMEOUT_S:g} s)",
            )
        try:
            out[q] = measure(conn)
        except (OSError, EOFError) as exc:
            return (
                "failed",
                f"partition {node.part} on {me}: the link to partition {q} on "
                f"{names.get(q, '?')} at {where} broke while measured: {_why(exc)}",
            )
        finally:
            conn.close()
    return ("ok", out)


def measure(conn) -> dict:
    """{rtt_s (median), rtt_min_s, rtt_max_s, bandwidth_bps (bytes/s, both ways counted)}."""
    rtts = []
    for _ in range(ROUND_TRIPS):
        t0 = time.perf_counter()
        conn.send(("echo", SMALL))
        conn.recv_bytes()
        rtts.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(BULK_MESSAGES):
        conn.send(("echo", BULK))
        conn.recv_bytes()
    bulk_s = time.perf_counter() - t0
    return {
        "rtt_s": statistics.median(rtts),
        "rtt_min_s": min(rtts),
        "rtt_max_s": max(rtts),
        "bandwidth_bps": 2 * len(BULK) * BULK_MESSAGES / bulk_s,
    }


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no answer"
    return (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__).lower()
