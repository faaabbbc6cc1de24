"""TPC-C's terminals and its deferred Delivery, inside each partition's process.

Spec mode: ten terminals per warehouse of the partition, each with its home warehouse and
district, cycling as clause 5.2.5 says: a card from its deck, the type's keying time, the
transaction (response time from submission, queueing included), a think time drawn
exponentially about the type's mean and truncated at ten times it. No thread per terminal:
the terminals are entries in one timing heap, served by a few worker threads, each with its
cursor and its links to the other partitions. No-wait mode: as many terminals as workers,
without keying or think times (the engineering peak, as go-tpc runs by default).

A transaction whose warehouses all live here is local; a remote New-Order line or a remote
Payment customer on another partition goes through the OLTP core's two-phase commit
(remote.py). Delivery is deferred in spec mode: the terminal's response is its queueing,
and a delivery worker per partition runs the batch and records when it completed.
"""

from __future__ import annotations

import heapq
import math
import os
import queue
import random
import threading
import time
from dataclasses import dataclass, field

import duckdb

from wisconsin.oltp import cpu, histogram, terminals, twophase
from wisconsin.oltp.terminals import MAX_RETRIES, Tally
from wisconsin.workloads.tpcc import inputs as ins
from wisconsin.workloads.tpcc import receipts, remote, rules
from wisconsin.workloads.tpcc import transactions as tx
from wisconsin.workloads.tpcc.schema import DISTRICTS

KEYING_S = {ins.NEW_ORDER: 18.0, ins.PAYMENT: 3.0, ins.ORDER_STATUS: 2.0, ins.DELIVERY: 2.0,
            ins.STOCK_LEVEL: 2.0}  # fmt: skip
THINK_MEAN_S = {ins.NEW_ORDER: 12.0, ins.PAYMENT: 12.0, ins.ORDER_STATUS: 10.0,
                ins.DELIVERY: 5.0, ins.STOCK_LEVEL: 5.0}  # fmt: skip
THINK_CAP = 10.0  # a think time is at most ten times its mean (clause 5.2.5.4)
TERMINALS_PER_WAREHOUSE = 10
TERMINAL_KINDS = ("spec", "nowait")


@dataclass(frozen=True)
class Load:
    mode: str  # "spec" | "nowait"
    ramp_s: float  # unmeasured seconds before the window (terminals start staggered)
    duration_s: float  # the measured window
    seed: int
    c_run: tuple[int, int, int]  # the run's NURand constants (C_LAST, C_ID, OL_I_ID)
    workers: int = 4  # threads per partition serving due transactions
    checkpoint_at_s: float | None = None  # a CHECKPOINT this far into the window
    drain_s: float = 80.0  # queued deliveries may still complete this long after the window
    deferred_delivery: bool = True
    local_only: bool = False  # remote warehouses drawn within the partition (benchmarks)


@dataclass
class Times:
    """Keying or think times of one type: count, sum, min, max (seconds)."""

    n: int = 0
    total: float = 0.0
    low: float = math.inf
    high: float = 0.0

    def add(self, s: float) -> None:
        self.n, self.total = self.n + 1, self.total + s
        self.low, self.high = min(self.low, s), max(self.high, s)

    def as_list(self) -> list[float]:
        return [self.n, self.total, self.low if self.n else 0.0, self.high]


@dataclass
class Terminal:
    w_id: int
    d_id: int
    inputs: ins.Inputs
    deck: object
    rng: random.Random
    kind: str = ""
    submitted: float = 0.0
    keying: float = 0.0


@dataclass
class Counts:
    """What the input audit and the mix count, in the window."""

    by_kind: dict = field(default_factory=lambda: {k: Tally() for k in ins.KINDS})
    keying: dict = field(default_factory=lambda: {k: Times() for k in ins.KINDS})
    think: dict = field(default_factory=lambda: {k: Times() for k in ins.KINDS})
    rolled_back: int = 0
    lines: int = 0
    remote_lines: int = 0
    remote_payments: int = 0
    by_name: int = 0  # Payment and Order-Status by C_LAST
    new_orders_all: int = 0  # committed in the whole step (the d_next_o_id cross-check)
    no_done: list = field(default_factory=list)  # committed New-Orders: seconds into window


class Step:
    """One step at one partition: the terminals, the workers, the delivery worker."""

    def __init__(self, node, load: Load):
        self.node, self.load = node, load
        self.c = Counts()
        self.lock = threading.Condition()
        self.heap: list = []
        self.seq = 0
        self.t0 = time.perf_counter()
        self.t_start = self.t0 + load.ramp_s
        self.t_end = self.t_start + load.duration_s
        self.deliveries: queue.Queue = queue.Queue()
        self.delivered_log: list = []  # (queued s into window, seconds to complete, skipped)
        self.delivery_unfinished = 0
        self.delivered: dict = {}  # (w, d) -> orders delivered in this step
        self.wal: list[int] = []
        self.checkpoint: list = []  # [seconds into window, seconds it took, error]
        self.error = ""

    # --- terminals ---------------------------------------------------------------------

    def terminals(self) -> list[Terminal]:
        node, load = self.node, self.load
        wids = list(node.placement.warehouses_of(node.part))
        if load.mode == "spec":
            homes = [(w, d) for w in wids for d in range(1, TERMINALS_PER_WAREHOUSE + 1)]
        else:
            homes = [(wids[i % len(wids)], 1 + i % DISTRICTS) for i in range(load.workers)]
        c = rules.NURandC(*load.c_run)
        out = []
        for i, (w, d) in enumerate(homes):
            gen = rules.stream(load.seed, 0x7E, node.part, i)
            out.append(
                Terminal(w, d, ins.Inputs(node.placement, c, gen, node.scale, load.local_only),
                         ins.deck(gen),
                         random.Random(f"{load.seed}-{node.part}-{i}-think"))
            )  # fmt: skip
        return out

    def _schedule(self, term: Terminal, at: float) -> None:
        """Deal the terminal's next card and queue it, due after its keying time."""
        term.kind = next(term.deck)
        term.keying = KEYING_S[term.kind] if self.load.mode == "spec" else 0.0
        term.submitted = at + term.keying
        with self.lock:
            self.seq += 1
            heapq.heappush(self.heap, (term.submitted, self.seq, term))
            self.lock.notify()

    def _think(self, term: Terminal) -> float:
        if self.load.mode != "spec":
            return 0.0
        mean = THINK_MEAN_S[term.kind]
        return min(-math.log(1.0 - term.rng.random()) * mean, THINK_CAP * mean)

    def _next_due(self) -> Terminal | None:
        with self.lock:
            while not self.node.stopping.is_set():
                now = time.perf_counter()
                if now >= self.t_end:
                    return None
                if self.heap and self.heap[0][0] <= now:
                    return heapq.heappop(self.heap)[2]
                wait = (self.heap[0][0] if self.heap else self.t_end) - now
                self.lock.wait(min(wait, self.t_end - now, 0.5))
        return None

    def worker(self, index: int) -> None:
        cur = self.node.con.cursor()
        links = twophase.Links(self.node)
        rng = random.Random(f"{self.load.seed}-{self.node.part}-{index}-retry")
        try:
            while (term := self._next_due()) is not None:
                kind, began = term.kind, term.submitted
                inp = term.inputs.draw(kind, term.w_id, term.d_id)
                since = cpu.begin()
                result = self._one(cur, links, rng, kind, inp, began)
                if result is not None and result != "queued":  # oltp.cpu: its CPU, by type
                    remote = len(inp.partitions(self.node.placement)) > 1
                    cpu.charged(self.node, kind, since, remote)
                done = time.perf_counter()
                think = self._think(term)
                if result is not None and self.t_start <= done <= self.t_end:
                    self._count(kind, inp, result, began, done, term.keying, think)
                self._schedule(term, done + think)
        finally:
            links.close()
            cur.close()

    def _count(self, kind, inp, result, began, done, keying, think) -> None:
        c = self.c
        with self.lock:
            t = c.by_kind[kind]
            histogram.record(t.hist, done - began)
            t.committed += 1
            t.in_window += 1
            c.keying[kind].add(keying)
            c.think[kind].add(think)
            if kind == ins.NEW_ORDER:
                c.lines += len(inp.lines)
                c.remote_lines += sum(x.supply_w_id != inp.w_id for x in inp.lines)
                if result.rolled_back:
                    c.rolled_back += 1
                else:
                    c.no_done.append(done - self.t_start)
            elif kind == ins.PAYMENT:
                c.remote_payments += inp.customer.w_id != inp.w_id
            if kind in (ins.PAYMENT, ins.ORDER_STATUS):
                c.by_name += inp.customer.c_id is None

    def _one(self, cur, links, rng, kind, inp, began):
        """Run one transaction (retried on conflicts); its result, None if it failed."""
        node = self.node
        tally = self.c.by_kind[kind]
        txid = node.next_txid()
        node.log(f"B {txid} {kind}\n")
        if kind == ins.DELIVERY:
            if self.load.deferred_delivery:
                self.deliveries.put((began, txid, inp))
                return "queued"
            result = self._deliver(cur, rng, txid, inp)  # no-wait: inline, retried per district
            tally.failed += result is None
            return result
        out: list = []

        def body() -> bool:
            out[:] = [self._run(cur, links, kind, inp, txid)]
            return len(inp.partitions(node.placement)) > 1

        def receipt() -> str:
            return receipts.receipt(kind, inp, out[0])

        ok = terminals.guarded(
            node, tally, lambda: terminals.attempt(node, tally, rng, txid, body, receipt)
        )
        if kind == ins.NEW_ORDER and ok and not out[0].rolled_back:
            with self.lock:
                self.c.new_orders_all += 1
        return out[0] if ok else None

    def _run(self, cur, links, kind, inp, txid):
        node = self.node
        others = inp.partitions(node.placement) - {node.part}
        if not others:
            return tx.RUNNERS[type(inp)](cur, inp)
        if kind == ins.NEW_ORDER:
            return self._new_order(cur, links, inp, txid)
        return self._payment(cur, links, inp, txid, others.pop())

    def _new_order(self, cur, links, inp: ins.NewOrderInput, txid: int):
        pl, me = self.node.placement, self.node.part
        by_part: dict[int, list] = {}
        for k, line in enumerate(inp.lines):
            if line.partition(pl) != me:
                by_part.setdefault(line.partition(pl), []).append((k, line))
        prepares = {
            p: remote.stock_half(txid, inp.w_id, inp.d_id, [x for _, x in kl])
            for p, kl in by_part.items()
        }
        result: list = []

        def home(replies) -> None:
            def dists() -> dict:
                got = replies()
                return {k: got[p][j] for p, kl in by_part.items() for j, (k, _) in enumerate(kl)}

            cur.execute("BEGIN")
            try:
                result.append(tx.new_order_home(cur, inp, lambda x: x.partition(pl) == me, dists))
                for p, msg in prepares.items():
                    remote.decide(cur, p, msg)
            except BaseException:
                twophase.rollback(cur)
                raise

        try:
            twophase.commit(cur, links, prepares, home)
        except tx.UnusedItem as exc:
            return tx.NewOrderResult(exc.o_id, 0, rolled_back=True)
        return result[0]

    def _payment(self, cur, links, inp: ins.PaymentInput, txid: int, part: int):
        result: list = []

        def home(replies) -> None:
            def customer():
                c_id, balance = remote.balance_of(replies()[part])
                remote.decide(cur, part, remote.customer_half(txid, inp, c_id))
                return c_id, balance

            cur.execute("BEGIN")
            try:
                result.append(tx.payment_home(cur, inp, customer))
            except BaseException:
                twophase.rollback(cur)
                raise

        twophase.commit(cur, links, {part: remote.customer_half(txid, inp)}, home)
        return result[0]

    # --- deferred Delivery ---------------------------------------------------------------

    def _delivered(self, inp: ins.DeliveryInput, result: tx.DeliveryResult) -> None:
        with self.lock:
            for d, _ in result.delivered:
                key = (inp.w_id, d)
                self.delivered[key] = self.delivered.get(key, 0) + 1

    def delivery_worker(self) -> None:
        """Run the queued deliveries in order, one database transaction per district, until
        the queue is empty after the window (or the drain ends)."""
        cur = self.node.con.cursor()
        rng = random.Random(f"{self.load.seed}-{self.node.part}-delivery")
        deadline = self.t_end + self.load.drain_s
        try:
            while True:
                try:
                    queued, txid, inp = self.deliveries.get(timeout=0.2)
                except queue.Empty:
                    if time.perf_counter() >= self.t_end or self.node.stopping.is_set():
                        return
                    continue
                if time.perf_counter() > deadline or self.node.stopping.is_set():
                    self.delivery_unfinished += 1
                    continue
                result = self._deliver(cur, rng, txid, inp)
                done = time.perf_counter()
                if result is not None and self.t_start <= queued <= self.t_end:
                    self.delivered_log.append(
                        (queued - self.t_start, done - queued, len(result.skipped))
                    )
        finally:
            cur.close()

    def _deliver(self, cur, rng, txid, inp):
        delivered, skipped = [], []
        for d in range(1, DISTRICTS + 1):
            for _attempt in range(MAX_RETRIES):
                try:
                    with tx.transaction(cur):
                        o_id = tx.deliver_one(cur, inp.w_id, d, inp.carrier_id)
                    break
                except Exception as exc:
                    if not twophase.is_conflict(exc):
                        self.error = self.error or f"Delivery: {type(exc).__name__}: {exc}"
                        self.node.log(f"A {txid}\n")
                        return None
                    time.sleep(rng.random() * 0.002)
            else:
                self.node.log(f"A {txid}\n")
                return None
            (skipped.append(d) if o_id is None else delivered.append((d, o_id)))
        result = tx.DeliveryResult(tuple(delivered), tuple(skipped))
        self.node.log.acknowledge(f"C {txid}{receipts.receipt(ins.DELIVERY, inp, result)}\n")
        self._delivered(inp, result)
        return result

    # --- the engine: WAL size each second, a checkpoint inside the window -----------------

    def monitor(self, wal_path: str) -> None:
        cur = self.node.con.cursor()
        at, first = None, 0.0
        if self.load.checkpoint_at_s is not None:
            at = self.t_start + self.load.checkpoint_at_s
        try:
            while not self.node.stopping.is_set():
                now = time.perf_counter()
                if now >= self.t_end:
                    return
                if now >= self.t_start:
                    try:
                        self.wal.append(os.path.getsize(wal_path))
                    except OSError:
                        self.wal.append(0)
                if at is not None and now >= at:
                    first = first or time.perf_counter()
                    why = _checkpoint(cur)
                    if why == INTERRUPTED and now + 1.0 < self.t_end:
                        at = time.perf_counter() + 1.0  # it would have waited on: again
                    else:  # its time from the first attempt: the interrupted waits stalled too
                        at = None
                        self.checkpoint = [first - self.t_start, time.perf_counter() - first, why]
                time.sleep(max(0.0, 1.0 - (time.perf_counter() - now)))
        finally:
            cur.close()


# FORCE CHECKPOINT in DuckDB 2.0.1 waits for every open write transaction and, while it
# waits, blocks every other writer of its database (measured: a second writer's COMMIT waited
# as long). A remote half is an open write held until its home partition decides; when two
# partitions checkpoint at once, each waiting on a half whose home is blocked behind the
# other's checkpoint, neither ever ends (a no-wait cluster test hung 207 s). So a checkpoint
# that has not started within CHECKPOINT_WAIT_S is interrupted, which frees the writers, and
# tried again a second later.
CHECKPOINT_WAIT_S = 2.0
INTERRUPTED = "interrupted: open writes held it"


def _checkpoint(cur) -> str:
    """One FORCE CHECKPOINT on cur, interrupted after CHECKPOINT_WAIT_S: "" when done, else
    INTERRUPTED or the error's first line."""
    timer = threading.Timer(CHECKPOINT_WAIT_S, cur.interrupt)
    timer.start()
    try:
        cur.execute("FORCE CHECKPOINT").fetchall()
        return ""
    except duckdb.InterruptException:
        return INTERRUPTED
    except Exception as exc:
        return twophase.first_line(exc)
    finally:
        timer.cancel()


def run(node, load: Load) -> dict:
    """One step at this partition: ramp-up, then the window; the tally as a dict."""
    step = Step(node, load)
    terms = step.terminals()
    for term in terms:  # staggered: the first submissions spread over the ramp-up
        offset = term.rng.random() * min(load.ramp_s, 20.0) if load.mode == "spec" else 0.0
        step._schedule(term, step.t0 + offset)
    threads = [threading.Thread(target=step.worker, args=(i,)) for i in range(load.workers)]
    threads.append(threading.Thread(target=step.monitor, args=(node.path + ".wal",)))
    if load.deferred_delivery:
        threads.append(threading.Thread(target=step.delivery_worker))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    c = step.c
    return {
        "by_kind": {
            k: {
                "hist": histogram.encode(t.hist),
                "count": t.in_window,
                "failed": t.failed,
                "retries": t.retries,
                "distributed": t.distributed,
                "keying": c.keying[k].as_list(),
                "think": c.think[k].as_list(),
                "error": t.error,
            }
            for k, t in c.by_kind.items()
        },
        "rolled_back": c.rolled_back,
        "lines": c.lines,
        "remote_lines": c.remote_lines,
        "remote_payments": c.remote_payments,
        "by_name": c.by_name,
        "new_orders_all": c.new_orders_all,
        "no_done": c.no_done,
        "deliveries": step.delivered_log,
        "delivery_unfinished": step.delivery_unfinished + step.deliveries.qsize(),
        "delivered": [[w, d, n] for (w, d), n in step.delivered.items()],
        "wal_bytes": step.wal,
        "checkpoint": step.checkpoint,
        "error": step.error or next((t.error for t in c.by_kind.values() if t.error), ""),
    }
