"""Row generation: schema, partitioning, and the batched generator.

Row k (k = unique2) is a pure function of (seed, n, k):
- unique1 comes from the dense-unique permutation (generator.permutation);
- the ten random integer columns read words [10k, 10k+10) of one PCG64 stream;
- stringu1/2/3 read bytes [52k, 52k+52) of one PCG64 stream each.
The streams are seeded from the seed alone (never n), so a batch is reached by
PCG64.advance and any partitioning of [0, n) yields the same rows.
See docs/schema.md for the column domains and their readings of the spec.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from functools import lru_cache

import numpy as np
import pyarrow as pa

from wisconsin.generator.permutation import permutation

GENERATOR_VERSION = "1"

# p = next prime > n must stay < 2**31 so residue products fit in uint64 (< 2**62);
# the largest prime gap below 2**31 is < 300, so this margin is ample.
MAX_ROWS = 2**31 - 1_000_000

COLUMNS = (
    "unique1",
    "unique2",
    "two",
    "four",
    "ten",
    "twenty",
    "onepct",
    "tenpct",
    "twenpct",
    "fiftypct",
    "hundpct",
    "odd1pct",
    "even1pct",
    "stringu1",
    "stringu2",
    "stringu3",
)

STRING_LEN = 52
# Index i = byte & 63 maps to ALPHABET[i]; the order (digits, upper, lower, '{', '|')
# is the one an additive SWAR mapping produces without per-byte overflow.
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz{|"
INT_WORDS_PER_ROW = 10  # one 64-bit word per random integer column
_RANDOM_INT_COLUMNS = COLUMNS[2:12]  # two .. odd1pct, in stream-word order
_CHUNK = 4096  # rows per inner step: keeps temporaries in L1/L2

_U32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S7 = np.uint64(7)
_LOW6 = np.uint64(0x3F3F3F3F3F3F3F3F)
_ONES = np.uint64(0x0101010101010101)
_GE10 = np.uint64(0x7676767676767676)  # 0x80 - 10 per byte: bit 7 set iff byte >= 10
_GE5B = np.uint64(0x2525252525252525)  # 0x80 - 0x5B per byte
_ZERO = np.uint64(0x3030303030303030)  # '0' per byte


def arrow_schema() -> pa.Schema:
    """The table's Arrow schema: 13 int32 columns then 3 string columns, all not null."""
    return _SCHEMA


_SCHEMA = pa.schema(
    [pa.field(c, pa.int32(), nullable=False) for c in COLUMNS[:13]]
    + [pa.field(c, pa.string(), nullable=False) for c in COLUMNS[13:]]
)
_INT_SCHEMA = pa.schema(list(_SCHEMA)[:13])


def _int(name: str, v: object) -> int:
    if isinstance(v, bool):
        raise ValueError(f"{name} must be an integer, got {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {v!r}") from None


def _check_n(n: object) -> int:
    n = _int("n", n)
    if not 1 <= n <= MAX_ROWS:
        raise ValueError(f"n must be in [1, {MAX_ROWS}], got {n}")
    return n


def partition_range(n: int, part: int, parts: int) -> tuple[int, int]:
    """unique2 range [lo, hi) of partition `part` of `parts`: (part*n//parts, (part+1)*n//parts)."""
    n = _check_n(n)
    part, parts = _int("part", part), _int("parts", parts)
    if not 1 <= parts <= n:
        raise ValueError(f"parts must be in [1, n={n}], got {parts}")
    if not 0 <= part < parts:
        raise ValueError(f"part must be in [0, {parts}), got {part}")
    return part * n // parts, (part + 1) * n // parts


def column_sizes(n: int) -> dict[str, int]:
    """Number of distinct values m of each random int column (value = offset + [0, m))."""
    return {
        "two": 2,
        "four": 4,
        "ten": 10,
        "twenty": 20,
        "onepct": max(1, n // 100),
        "tenpct": max(1, n // 10),
        "twenpct": max(1, n // 5),
        "fiftypct": max(1, n // 2),
        "hundpct": max(1, n),
        "odd1pct": max(1, n // 100 - 1),  # values 1..m
    }


@lru_cache(maxsize=8)
def _streams(seed: int) -> tuple[dict, ...]:
    # stream 0: integer words; streams 1..3: string bytes.  Only the seed goes in.
    return tuple(
        np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(i,))).state for i in range(4)
    )


def _stream_at(state: dict, word: int) -> np.random.PCG64:
    bg = np.random.PCG64()
    bg.state = state
    bg.advance(word)
    return bg


@lru_cache(maxsize=4)
def _offsets(rows: int) -> pa.Buffer:
    return pa.py_buffer(np.arange(0, rows * STRING_LEN + 1, STRING_LEN, dtype=np.int32))


def _int_columns(raw: np.ndarray, sizes: np.ndarray, out: np.ndarray) -> None:
    """out[c, r] = (raw[r, c] * sizes[c]) >> 64 exactly, in uint64 (multiply-high)."""
    rows = raw.shape[0]
    hi = np.empty((min(rows, _CHUNK), raw.shape[1]), dtype=np.uint64)
    lo = np.empty_like(hi)
    for a in range(0, rows, _CHUNK):
        r = raw[a : a + _CHUNK]
        h, low = hi[: r.shape[0]], lo[: r.shape[0]]
        # r = h*2^32 + low; (r*m) >> 64 == (h*m + ((low*m) >> 32)) >> 32, no overflow
        np.bitwise_and(r, _U32, out=low)
        low *= sizes
        low >>= _S32
        np.right_shift(r, _S32, out=h)
        h *= sizes
        h += low
        h >>= _S32
        out[:, a : a + r.shape[0]] = h.T


def _chars(words: np.ndarray) -> None:
    """Map each byte b of words, in place, to ALPHABET[b & 63] (SWAR on 8 bytes at once)."""
    tmp = np.empty(min(words.size, _CHUNK * 2), dtype=np.uint64)
    for a in range(0, words.size, tmp.size):
        w = words[a : a + tmp.size]
        t = tmp[: w.size]
        w &= _LOW6
        # bytes are <= 63 here, so adding < 0x80 never carries into the next byte
        np.add(w, _GE10, out=t)
        t >>= _S7
        t &= _ONES
        t *= np.uint64(7)  # '9'+1 -> 'A'
        w += t
        w += _ZERO
        # bytes now hold i+48 (+7 if i>=10): i>=36 <=> byte >= 36+48+7 = 0x5B
        np.add(w, _GE5B, out=t)
        t >>= _S7
        t &= _ONES
        t *= np.uint64(6)  # 'Z'+1 -> 'a'
        w += t


def _string_column(state: dict, k0: int, rows: int) -> pa.Array:
    b0, b1 = k0 * STRING_LEN, (k0 + rows) * STRING_LEN
    w0, w1 = b0 // 8, -(-b1 // 8)
    words = _stream_at(state, w0).random_raw(w1 - w0)
    _chars(words)
    data = pa.py_buffer(words.astype("<u8", copy=False)).slice(b0 - 8 * w0, b1 - b0)
    return pa.StringArray.from_buffers(rows, _offsets(rows), data)


def _int32_array(a: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(pa.int32(), a.size, [None, pa.py_buffer(a)])


def generate(
    n: int, seed: int, lo: int, hi: int, batch_rows: int = 65536, strings: bool = True
) -> Iterator[pa.RecordBatch]:
    """Yield the rows with unique2 in [lo, hi) of table (n, seed), in key order.

    Batches have at most batch_rows rows; only one batch is in memory at a time.
    seed is an integer in [0, 2**64).  Raises ValueError on bad arguments (eagerly).
    strings=False: the 13 integer columns only, the same values (the string columns come
    from their own streams): what the audit needs to re-derive answers, at a third of the cost.
    """
    n = _check_n(n)
    seed, lo, hi = _int("seed", seed), _int("lo", lo), _int("hi", hi)
    batch_rows = _int("batch_rows", batch_rows)
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    if not 0 <= lo <= hi <= n:
        raise ValueError(f"need 0 <= lo <= hi <= n, got lo={lo} hi={hi} n={n}")
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be >= 1, got {batch_rows}")
    return _batches(n, seed, lo, hi, batch_rows, strings)


def _batches(
    n: int, seed: int, lo: int, hi: int, batch_rows: int, strings: bool = True
) -> Iterator[pa.RecordBatch]:
    perm = permutation(n, seed)
    states = _streams(seed)
    sizes_by_col = column_sizes(n)
    sizes = np.array([sizes_by_col[c] for c in _RANDOM_INT_COLUMNS], dtype=np.uint64)
    pow_len = min(batch_rows, hi - lo) + perm.skipped.size
    ints_stream = _stream_at(states[0], lo * INT_WORDS_PER_ROW)
    for k0 in range(lo, hi, batch_rows):
        rows = min(batch_rows, hi - k0)
        ints = np.empty((13, rows), dtype=np.int32)
        ints[0] = perm.values(k0, rows, pow_len)
        ints[1] = np.arange(k0, k0 + rows, dtype=np.int32)
        # the int stream is read sequentially: batch k0 starts at word 10*k0
        raw = ints_stream.random_raw(rows * INT_WORDS_PER_ROW).reshape(rows, INT_WORDS_PER_ROW)
        _int_columns(raw, sizes, ints[2:12])
        ints[11] += 1  # odd1pct in [1, m]
        np.multiply(ints[11], 2, out=ints[12])
        arrays = [_int32_array(ints[i]) for i in range(13)]
        if not strings:
            yield pa.RecordBatch.from_arrays(arrays, schema=_INT_SCHEMA)
            continue
        arrays += [_string_column(states[i], k0, rows) for i in (1, 2, 3)]
        yield pa.RecordBatch.from_arrays(arrays, schema=_SCHEMA)
