"""Dense-unique permutation of 0..n-1 (Gray et al., SIGMOD 1994).

The sequence x_j = x0 * g'^j mod p (p the smallest prime > n, g' a primitive root)
visits every residue 1..p-1 once for j = 0..p-2.  Value v_j = x_j - 1; the
p-1-n values >= n are skipped.  Their sequence indices D are found once per
(n, seed) by discrete logarithm (baby-step giant-step), which turns "the k-th
kept value" into a closed form: any row range can be produced without walking
the sequence from the start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

_MASK64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """One step of splitmix64: a 64-bit bijective mix (Steele et al. 2014)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def is_prime(m: int) -> bool:
    """Deterministic Miller-Rabin; bases 2, 3, 5, 7 are exact below 3.2e9 > 2**31."""
    if m < 2:
        return False
    for q in (2, 3, 5, 7):
        if m % q == 0:
            return m == q
    d, r = m - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for a in (2, 3, 5, 7):
        x = pow(a, d, m)
        if x in (1, m - 1):
            continue
        for _ in range(r - 1):
            x = x * x % m
            if x == m - 1:
                break
        else:
            return False
    return True


def next_prime(n: int) -> int:
    """Smallest prime strictly greater than n."""
    m = n + 1
    while not is_prime(m):
        m += 1
    return m


def prime_factors(m: int) -> list[int]:
    """Distinct prime factors of m by trial division (m < 2**31: <= 46341 divisions)."""
    out = []
    q = 2
    while q * q <= m:
        if m % q == 0:
            out.append(q)
            while m % q == 0:
                m //= q
        q += 1 if q == 2 else 2
    if m > 1:
        out.append(m)
    return out


def primitive_root(p: int) -> int:
    """Smallest primitive root of the prime p."""
    if p == 2:
        return 1
    qs = prime_factors(p - 1)
    g = 2
    while any(pow(g, (p - 1) // q, p) == 1 for q in qs):
        g += 1
    return g


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


@lru_cache(maxsize=16)
def powers(p: int, g: int, length: int) -> np.ndarray:
    """g^i mod p for i in 0..length-1 as uint64 (cached, read-only)."""
    return _readonly(_powers(p, g, length))


def _powers(p: int, g: int, length: int) -> np.ndarray:
    # doubling: log2(length) vector passes instead of a length-long scalar loop
    pw = np.empty(length, dtype=np.uint64)
    if length == 0:
        return pw
    pw[0] = 1 % p
    k = 1
    while k < length:
        cnt = min(k, length - k)
        np.multiply(pw[:cnt], np.uint64(pow(g, k, p)), out=pw[k : k + cnt])
        np.remainder(pw[k : k + cnt], np.uint64(p), out=pw[k : k + cnt])
        k += cnt
    return pw


def discrete_logs(p: int, g: int, targets: np.ndarray) -> np.ndarray:
    """j in [0, p-1) with g^j == t (mod p) for each t in targets (g a primitive root).

    Baby-step giant-step with one baby table shared by all T targets.  The table
    has sqrt((p-1)*T) entries rather than sqrt(p): that balances the baby work
    against T * (giant steps), so T ~ 300 targets near 2**31 cost ~1M steps each side.
    """
    t = np.asarray(targets, dtype=np.uint64)
    if t.size == 0:
        return np.empty(0, dtype=np.int64)
    order_n = p - 1
    bs = min(order_n, max(1, math.isqrt(order_n * t.size) + 1))
    gs = -(-order_n // bs)
    baby = _powers(p, g, bs)  # one-off tables: not worth caching
    order = np.argsort(baby, kind="stable")
    sorted_baby = baby[order]
    # giant step factor g^-bs; pow(g, -bs, p) needs Python >= 3.8
    giant = _powers(p, pow(g, -bs, p), gs)
    out = np.empty(t.size, dtype=np.int64)
    # chunk the targets so the T x gs matrix stays ~8M entries
    step = max(1, (1 << 23) // gs)
    for a in range(0, t.size, step):
        vals = (t[a : a + step, None] * giant[None, :]) % np.uint64(p)
        pos = np.searchsorted(sorted_baby, vals)
        pos[pos == bs] = 0
        hit = sorted_baby[pos] == vals
        if not hit.any(axis=1).all():
            raise ArithmeticError("discrete log not found; g is not a primitive root?")
        q = hit.argmax(axis=1)  # first giant step that hits = smallest j
        rows = np.arange(q.size)
        out[a : a + step] = q.astype(np.int64) * bs + order[pos[rows, q]].astype(np.int64)
    return out


@dataclass(frozen=True)
class Permutation:
    """Setup of the dense-unique permutation for one (n, seed)."""

    n: int
    p: int
    g: int  # seeded generator g' = root^e
    x0: int  # x_0 = g'^s
    skipped: np.ndarray  # sorted sequence indices j whose value v_j >= n
    skipped_shift: np.ndarray  # skipped[i] - i: number of kept indices before skipped[i]

    def seq_index(self, k: int) -> int:
        """Sequence index j of the k-th kept value (row k)."""
        return k + int(np.searchsorted(self.skipped_shift, k, side="right"))

    def values(self, k0: int, count: int, pow_len: int) -> np.ndarray:
        """unique1 of rows k0..k0+count-1 as uint64 (pow_len >= window length, for caching)."""
        if count == 0:
            return np.empty(0, dtype=np.uint64)
        j0 = self.seq_index(k0)
        j1 = self.seq_index(k0 + count - 1)
        length = j1 - j0 + 1
        pw = powers(self.p, self.g, max(pow_len, length))
        start = pow(self.g, j0, self.p) * self.x0 % self.p
        x = pw[:length] * np.uint64(start)
        x %= np.uint64(self.p)
        x -= np.uint64(1)
        if length == count:
            return x
        return x[x < np.uint64(self.n)]


@lru_cache(maxsize=64)
def permutation(n: int, seed: int) -> Permutation:
    """Per-(n, seed) setup: prime, seeded generator and start, skipped indices."""
    p = next_prime(n)
    root = primitive_root(p)
    order_n = p - 1
    # e coprime to p-1 keeps g' = root^e a primitive root; different seeds -> different walks
    e = 1 + splitmix64(seed ^ 0x5EED_0001) % order_n
    while math.gcd(e, order_n) != 1:
        e = e % order_n + 1
    g = pow(root, e, p)
    s = splitmix64(seed ^ 0x5EED_0002) % order_n
    x0 = pow(g, s, p)
    # skipped values v in n..p-2 are residues x = v+1 in n+1..p-1; solve x0 * g^j = x
    x0_inv = pow(x0, -1, p)
    targets = np.arange(n + 1, p, dtype=np.uint64) * np.uint64(x0_inv) % np.uint64(p)
    skipped = np.sort(discrete_logs(p, g, targets))
    shift = skipped - np.arange(skipped.size, dtype=np.int64)
    return Permutation(n, p, g, x0, _readonly(skipped), _readonly(shift))
