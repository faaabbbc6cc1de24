"""The specification's random rules, vectorised with numpy: NURand and its run-time
constants (clause 2.1.6), a-strings and n-strings (4.3.2.2), last names (4.3.2.3), zip codes
(4.3.2.7), "ORIGINAL" in 10% of the data strings (4.3.3.1).

Every draw comes from `stream(seed, *tags)`, a PCG64 generator seeded by the sequence
(seed, *tags): one stream per (table, warehouse), so a table's rows are a pure function of
its tags and the seed, whatever else was generated before.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

ALNUM = np.frombuffer(
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", dtype=np.uint8
)  # clause 4.3.2.2: at least 26 lower, 26 upper case letters and the 10 digits
LETTERS = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", dtype=np.uint8)
DIGITS = np.frombuffer(b"0123456789", dtype=np.uint8)
SYLLABLES = ("BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING")
ORIGINAL = np.frombuffer(b"ORIGINAL", dtype=np.uint8)

# NURand's A per field (clause 2.1.6)
A_C_LAST, A_C_ID, A_OL_I_ID = 255, 1023, 8191


def stream(seed: int, *tags: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, *tags])))


def nurand(rng: np.random.Generator, a: int, x: int, y: int, c: int, size=None):
    """NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x."""
    r = rng.integers(0, a, size, endpoint=True) | rng.integers(x, y, size, endpoint=True)
    return (r + c) % (y - x + 1) + x


@dataclass(frozen=True)
class NURandC:
    """The run-time constants C of NURand, one per field, the same for every terminal."""

    c_last: int  # A = 255
    c_id: int  # A = 1023
    ol_i_id: int  # A = 8191


LOAD_TAG = 0x10AD  # the stream the load's constants come from
RUN_TAG = 0x5E1F


def load_constants(seed: int) -> NURandC:
    """C_LOAD (and the C of C_ID and OL_I_ID) of a database: a function of its seed."""
    rng = stream(seed, LOAD_TAG)
    return NURandC(*(int(rng.integers(0, a, endpoint=True)) for a in (A_C_LAST, A_C_ID, A_OL_I_ID)))


def c_delta_ok(c_load: int, c_run: int) -> bool:
    """Clause 2.1.6.1: |C_RUN - C_LOAD| of C_LAST is in [65 .. 119], and not 96 or 112."""
    delta = abs(c_run - c_load)
    return 65 <= delta <= 119 and delta not in (96, 112)


def run_constants(load: NURandC, seed: int) -> NURandC:
    """The constants of a measurement run: C_RUN of C_LAST drawn uniformly from the values
    in [0 .. 255] that clause 2.1.6.1 allows beside C_LOAD; the C of C_ID and OL_I_ID drawn
    afresh in [0 .. A] (the clause constrains only C_LAST's)."""
    rng = stream(seed, RUN_TAG)
    allowed = [c for c in range(A_C_LAST + 1) if c_delta_ok(load.c_last, c)]
    c_last = allowed[int(rng.integers(0, len(allowed)))]
    return NURandC(
        c_last,
        int(rng.integers(0, A_C_ID, endpoint=True)),
        int(rng.integers(0, A_OL_I_ID, endpoint=True)),
    )


# --- strings as Arrow arrays built from one byte buffer --------------------------------------


def _string_array(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    n = len(offsets) - 1
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)
    )


def fixed_strings(chars: np.ndarray) -> pa.Array:
    """An (n, k) uint8 array of characters as n strings of length k."""
    n, k = chars.shape
    return _string_array(np.arange(n + 1, dtype=np.int64) * k, np.ascontiguousarray(chars).ravel())


def random_chars(rng, n: int, k: int, alphabet: np.ndarray = ALNUM) -> np.ndarray:
    return alphabet[rng.integers(0, len(alphabet), (n, k), dtype=np.uint8)]


def a_strings(
    rng, n: int, lo: int, hi: int, alphabet: np.ndarray = ALNUM, original: float = 0.0
) -> pa.Array:
    """n random strings of random length in [lo .. hi] (an a-string, clause 4.3.2.2);
    original: that fraction of the rows, chosen at random, holds "ORIGINAL" at a random
    position (clause 4.3.3.1, I_DATA and S_DATA)."""
    lengths = rng.integers(lo, hi, n, endpoint=True)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = alphabet[rng.integers(0, len(alphabet), int(offsets[-1]), dtype=np.uint8)]
    if original:
        rows = rng.choice(n, int(round(n * original)), replace=False)
        start = offsets[rows] + rng.integers(0, lengths[rows] - len(ORIGINAL), endpoint=True)
        data[start[:, None] + np.arange(len(ORIGINAL))] = ORIGINAL
    return _string_array(offsets, data)


def n_strings(rng, n: int, k: int) -> pa.Array:
    return fixed_strings(random_chars(rng, n, k, DIGITS))


def zips(rng, n: int) -> pa.Array:
    """Clause 4.3.2.7: a random n-string of 4 numbers and the constant "11111"."""
    chars = np.full((n, 9), ord("1"), dtype=np.uint8)
    chars[:, :4] = random_chars(rng, n, 4, DIGITS)
    return fixed_strings(chars)


def states(rng, n: int) -> pa.Array:
    return fixed_strings(random_chars(rng, n, 2, LETTERS))


def last_name(number: int) -> str:
    """Clause 4.3.2.3: the syllables of the three digits of number in [0 .. 999]."""
    return "".join(SYLLABLES[int(d)] for d in f"{number:03d}")


LAST_NAMES = pa.array([last_name(i) for i in range(1000)], pa.string())


def last_names(numbers: np.ndarray) -> pa.Array:
    return LAST_NAMES.take(pa.array(numbers, pa.int32()))


def exactly(rng, n: int, fraction: float) -> np.ndarray:
    """A boolean mask with round(n * fraction) rows set, chosen at random."""
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, int(round(n * fraction)), replace=False)] = True
    return mask
