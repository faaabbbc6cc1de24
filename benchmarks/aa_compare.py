"""A/A (and A/A') comparisons of real runs in blocks: do identical runs come out identical?

Resumable across sessions: every finished pair is appended as one JSON line to
benchmarks/results/aa-compare-pairs.jsonl (the block summaries of both runs, the verdict and
p-values), and a run of this script does only the pairs still missing. Its tables and run
files live in --work (outside the repository, kept between sessions to reuse the tables).

Pairs (same command, same data, default blocks):
- "aa": two runs of one F table (P = 1, 2), cold, shared-nothing, --repeat 15 and the default
  --blocks (15 blocks of 1 round; rows record their blocks, and only pairs at the current
  default count: the 3- and 10-block pairs of 2026-11-25 stay in the file as history, and
  power_against_blocks resamples the 10-block ones);
- "power": A on that table, B on a table 25% larger (--force: the sizes differ by design);
  the cold scan should be found slower (ratio near 1.25).
Each row records what the runs' noise preflights found (other load, swap...) and the other
load measured while each run ran (busy CPU less the run's own; see OTHER_LOAD_LIMIT); pairs run
until --pairs (--power-pairs) quiet ones are recorded, at most twice as many in all, and the
goals are judged on the quiet pairs, with every pair reported too.

Then, from the recorded block summaries only (not from a model of them):
- the real pairs: how many had any significant point after Holm;
- 1,000 A/A compares built by drawing, per point, the default number of blocks for A and for B
  from all blocks the A/A runs recorded (bootstrap of block medians across runs): the
  family-wise false-positive rate with its 95% Wilson interval;
- power against blocks: 1,000 A/A' compares per block count (3 to 20), drawing whole blocks of
  A from the power pairs' A runs and of B from their B runs: how often the cold scan is found
  slower (its F2 point or its curve over P) under Holm over every point and curve;
Verdicts are recomputed from the run files (when still in --work) by the current compare:
points and whole curves (analysis.curves), one Holm family.
- the coverage of the long-run speedup (the median over every recorded block) by the block
  interval at 3 and 10 blocks, resampled the same way.

    python benchmarks/aa_compare.py --pairs 10 --power-pairs 10 --work ../aa-work
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from _results import recorded  # benchmarks/_results.py: this directory is sys.path[0] here

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ROOT / "benchmarks" / "results" / "aa-compare-pairs.jsonl"
RUN = ["--tables", "F", "--mode", "shared-nothing", "--cache", "cold", "--repeat", "15",
       "--quiet"]  # fmt: skip


def wisconsin(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "wisconsin", *map(str, args)], capture_output=True, text=True
    )


def ensure_table(data: Path, rows: int) -> None:
    if not (data / "F2" / "manifest.json").exists():
        r = wisconsin("generate", "--kind", "F", "--rows", rows, "--partitions", "1,2",
                      "--data", data, "--quiet")  # fmt: skip
        if r.returncode:
            sys.exit(f"generate failed: {r.stderr.strip()}")


# Other load during a run, in cores: the machine's busy CPU (from /proc/stat, steal
# included) less the CPU of the run's own process tree (every worker is reaped by it, so
# RUSAGE_CHILDREN holds them all). The preflight looks only at the start of a run; this
# sees a neighbour that starts later. Above it, the run is not quiet.
OTHER_LOAD_LIMIT = 0.15


def _busy_seconds() -> float:
    with open("/proc/stat") as f:
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(
            int, f.readline().split()[1:9]
        )
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _children_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def one_run(data: Path, out: Path) -> tuple[Path, float]:
    """One run's file and the other load (cores) measured while it ran."""
    before = set(out.glob("*.json")) if out.exists() else set()
    busy0, ours0, t0 = _busy_seconds(), _children_seconds(), time.monotonic()
    r = wisconsin("run", "--data", data, *RUN, "--out", out)
    busy, ours = _busy_seconds() - busy0, _children_seconds() - ours0
    if r.returncode:
        sys.exit(f"run failed: {r.stderr.strip()}")
    (path,) = set(out.glob("*.json")) - before
    return path, max(0.0, busy - ours) / (time.monotonic() - t0)


def summary(path: Path) -> dict:
    """point label -> per block median seconds (what the resampling draws from)."""
    from wisconsin.runfiles import runfile

    run = runfile.load(path)
    return {
        f"{m.table}/{m.query}": [float(np.median(t)) for t in run.times_by_block(m).values()]
        for m in run.measurements
        if m.times
    }


def record_pair(kind: str, index: int, a: tuple[Path, float], b: tuple[Path, float]) -> dict:
    from wisconsin.runfiles import runfile
    from wisconsin.workloads.wisconsin.compare import compare_runs

    (a, load_a), (b, load_b) = a, b
    run_a, run_b = runfile.load(a), runfile.load(b)
    c = compare_runs(run_a, run_b, force=kind == "power")
    noise = [f for r in (run_a, run_b) for f in _findings(r)] + [
        f"other load {x:.2f} cores during run {side}"
        for side, x in (("A", load_a), ("B", load_b))
        if x > OTHER_LOAD_LIMIT
    ]
    row = {
        "kind": kind,
        "pair": index,
        "blocks": run_a.blocks_done(),
        # the noise preflight of either run found other load, swap...: not a quiet pair
        "noise": noise,
        "other_load": [round(load_a, 3), round(load_b, 3)],
        "a": a.name,
        "b": b.name,
        "verdict": c.verdict,
        "significant": [f"{r.table}/{r.query}" for r in c.rows if r.significant]
        + [x.label for x in c.curves if x.significant],
        "points": {
            f"{r.table}/{r.query}": {
                "ratio": r.time_ratio.value,
                "lo": r.time_ratio.lo,
                "hi": r.time_ratio.hi,
                "p": r.p_value,
                "p_holm": r.p_holm,
                "detectable": r.detectable,
            }
            for r in c.rows
        },
        "curves": {
            x.label: {"ratio": x.time_ratio.value, "p": x.p_value, "p_holm": x.p_holm}
            for x in c.curves
        },
        "blocks_a": summary(a),
        "blocks_b": summary(b),
    }
    with open(PAIRS, "a") as f:  # one whole line per pair, fsynced: a kill loses one pair
        f.write(json.dumps(row) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return row


def _findings(run) -> list[str]:
    pre = run.environment.preflight
    return list(pre.findings) if pre is not None else []


def quiet(rows: list[dict]) -> list[dict]:
    """Pairs whose runs' noise preflights and in-run load found nothing (rows from before
    either was recorded count)."""
    return [r for r in rows if not r.get("noise")]


def backfill_noise(runs: Path) -> None:
    """Rows written before "noise" was recorded get it from their run files (when still in
    --work): the file is rewritten whole, atomically."""
    from wisconsin.runfiles import runfile

    if not PAIRS.exists():
        return
    lines, changed = [], False
    for line in PAIRS.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if "noise" not in row and row.get("blocks") and (runs / row["a"]).exists():
            row["noise"] = [
                f for name in (row["a"], row["b"]) for f in _findings(runfile.load(runs / name))
            ]
            line, changed = json.dumps(row), True
        lines.append(line)
    if changed:
        tmp = PAIRS.with_suffix(".tmp")
        tmp.write_text("\n".join(lines) + "\n")
        os.replace(tmp, PAIRS)


def default_blocks() -> int:
    from wisconsin.measure.options import RunOptions

    return RunOptions(data_dir=".").blocks


def done(kind: str, every: bool = False) -> list[dict]:
    """The recorded pairs of this kind at the current default blocks (rows from before
    blocks were recorded ran 3); every: at any number of blocks (the resampling pools:
    a block is a block, however many its run had)."""
    if not PAIRS.exists():
        return []
    rows = []
    for line in PAIRS.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line cut by a kill
        if row.get("kind") == kind and (every or row.get("blocks", 3) == default_blocks()):
            rows.append(row)
    return rows


def wilson(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(method="wilson")
    return ci.low, ci.high


def resampled_false_positives(rows: list[dict], trials: int, blocks: int, rng) -> tuple[int, int]:
    """A/A compares of `blocks` whole blocks a side, both drawn from every block the A/A runs
    recorded, tested as compare does (points and curves, one Holm family): how often
    anything is called different."""
    labels = sorted(rows[0]["blocks_a"])
    pool = np.vstack([_block_vectors(rows, side, labels) for side in ("blocks_a", "blocks_b")])
    hits = 0
    for _ in range(trials):
        a = pool[rng.integers(0, len(pool), blocks)]
        b = pool[rng.integers(0, len(pool), blocks)]
        hits += any(q < 0.05 for q, _ in family_tests(a, b, labels).values())
    return hits, trials


def recompared(pairs: list[dict], runs: Path, rows: int) -> list[dict]:
    """Each pair's verdict as the current compare gives it (points and whole curves, one
    family), from its run files when they are still in --work, else from the block medians
    the row recorded (block_run)."""
    from wisconsin.runfiles import runfile
    from wisconsin.workloads.wisconsin.compare import compare_runs

    out = []
    for row in pairs:
        if (runs / row["a"]).exists() and (runs / row["b"]).exists():
            a, b = runfile.load(runs / row["a"]), runfile.load(runs / row["b"])
        else:  # the run files are gone: the same blocks, rebuilt from the row's summaries
            larger = int(rows * 1.25) if row["kind"] == "power" else rows
            a = block_run(row["blocks_a"], row["a"], rows)
            b = block_run(row["blocks_b"], row["b"], larger)
        if a is not None and b is not None:
            c = compare_runs(a, b, force=row["kind"] == "power")
            row = dict(
                row,
                verdict=c.verdict,
                significant=[f"{r.table}/{r.query}" for r in c.rows if r.significant]
                + [x.label for x in c.curves if x.significant],
            )
        out.append(row)
    return out


def block_run(blocks: dict[str, list[float]], name: str, rows: int):
    """A run of the recorded block medians: one repetition per block, a block per round.
    compare tests blocks on their log medians alone (significance.block_test, analysis.curves),
    so its verdict on these runs is its verdict on the real ones; a power pair's larger
    table is told apart by its row count. None if the row has no blocks."""
    import dataclasses

    sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
    from make_fixture_runs import in_blocks, run_from_times

    n = min((len(v) for v in blocks.values()), default=0)
    if n < 2:
        return None
    times = {}
    for label, meds in blocks.items():
        table, query = label.split("/")
        times[(table[0], int(table[1:]), query)] = meds[:n]
    run = run_from_times(times, f_rows=rows)
    return dataclasses.replace(in_blocks(run), started_utc=name)


def _block_vectors(rows: list[dict], side: str, labels: list[str]) -> np.ndarray:
    """Every recorded block of one side as a vector of log median times over labels (blocks
    are drawn whole: a block's points share its fresh workers and its minutes)."""
    out = []
    for row in rows:
        meds = row[side]
        n = min(len(meds.get(x, [])) for x in labels)
        out += [[math.log(meds[x][i]) for x in labels] for i in range(n)]
    return np.array(out)


def family_tests(a: np.ndarray, b: np.ndarray, labels: list[str]) -> dict[str, tuple[float, bool]]:
    """As compare does it: each point, each query's curve over P ("F scan"), each table's
    curve over its queries ("F2"), Welch t on blocks' (mean) log times, Holm over all of
    them. name -> (adjusted p, B slower)."""
    from scipy import stats as sps

    from wisconsin.workloads.wisconsin.compare import holm

    cols = {x: [i] for i, x in enumerate(labels)}
    kinds = sorted({x[0] for x in labels})
    for kind in kinds:
        for q in sorted({x.split("/")[1] for x in labels if x[0] == kind}):
            cols[f"{kind} {q}"] = [
                i for i, x in enumerate(labels) if x[0] == kind and x.endswith("/" + q)
            ]
        for t in sorted({x.split("/")[0] for x in labels if x[0] == kind}):
            cols[t] = [i for i, x in enumerate(labels) if x.startswith(t + "/")]
    names, ps, slower = list(cols), [], []
    for name in names:
        xa, xb = a[:, cols[name]].mean(1), b[:, cols[name]].mean(1)
        p = sps.ttest_ind(xb, xa, equal_var=False).pvalue
        ps.append(1.0 if np.isnan(p) else float(p))
        slower.append(xb.mean() > xa.mean())
    return {n: (q, s) for n, q, s in zip(names, holm(ps), slower, strict=True)}


def scan_found(tests: dict[str, tuple[float, bool]]) -> bool:
    """The larger table's cold scan found slower: its F2 point or its curve over P."""
    return any(tests[n][1] and tests[n][0] < 0.05 for n in ("F2/scan", "F scan") if n in tests)


def power_against_blocks(rows: list[dict], blocks: int, trials: int, rng) -> tuple[int, int]:
    """Compares of `blocks` whole blocks of A (drawn from the power pairs' A runs) with
    `blocks` of B (from their B runs), tested as compare does: how often the cold scan is
    found slower."""
    labels = sorted(set(rows[0]["blocks_a"]) & set(rows[0]["blocks_b"]))
    pa, pb = _block_vectors(rows, "blocks_a", labels), _block_vectors(rows, "blocks_b", labels)
    hits = 0
    for _ in range(trials):
        a = pa[rng.integers(0, len(pa), blocks)]
        b = pb[rng.integers(0, len(pb), blocks)]
        hits += scan_found(family_tests(a, b, labels))
    return hits, trials


def coverage(rows: list[dict], blocks: int, trials: int, rng) -> dict[str, float]:
    """Per F2 point: how often the block interval over `blocks` blocks drawn from all A/A
    blocks (paired within a block: F1 and F2 of one block) covers the all-blocks speedup."""
    from wisconsin.analysis.stats import block_ratio_interval

    out = {}
    queries = sorted({k.split("/")[1] for row in rows for k in row["blocks_a"]})
    for q in queries:
        pairs = [
            (f1, f2)
            for row in rows
            for side in ("blocks_a", "blocks_b")
            for f1, f2 in zip(
                row[side].get(f"F1/{q}", []), row[side].get(f"F2/{q}", []), strict=False
            )
        ]
        if len(pairs) < blocks:
            continue
        arr = np.array(pairs)
        truth = float(np.exp(np.median(np.log(arr[:, 0] / arr[:, 1]))))
        hit = 0
        for _ in range(trials):
            pick = arr[rng.integers(0, len(arr), blocks)]
            r = block_ratio_interval([[x] for x in pick[:, 0]], [[x] for x in pick[:, 1]])
            hit += r.lo is not None and r.lo <= truth <= r.hi
        out[q] = hit / trials
    return out


def main() -> int:
    global PAIRS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--power-pairs", type=int, default=10)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--work", type=Path, default=ROOT.parent / "aa-work")
    ap.add_argument("--pairs-file", type=Path, default=PAIRS, help="(trials: another file)")
    args = ap.parse_args()
    PAIRS = args.pairs_file
    work = args.work.absolute()
    base, larger = work / "data", work / "data-125"
    ensure_table(base, args.rows)
    backfill_noise(work / "runs")
    i = len(done("aa"))
    while len(quiet(done("aa"))) < args.pairs and i < 2 * args.pairs:
        a, b = one_run(base, work / "runs"), one_run(base, work / "runs")
        row = record_pair("aa", i, a, b)
        print(f"aa pair {i + 1}: {row['verdict']}; significant: {row['significant'] or '-'}"
              f"{'; noise: ' + '; '.join(row['noise']) if row['noise'] else ''}")  # fmt: skip
        i += 1
    if args.power_pairs:
        ensure_table(larger, int(args.rows * 1.25))
    i = len(done("power"))
    while len(quiet(done("power"))) < args.power_pairs and i < 2 * args.power_pairs:
        # alternate which side runs first: drift over the pair's minutes hits A and B alike
        if i % 2:
            b = one_run(larger, work / "runs")
            a = one_run(base, work / "runs")
        else:
            a, b = one_run(base, work / "runs"), one_run(larger, work / "runs")
        row = record_pair("power", i, a, b)
        scan = row["points"].get("F2/scan", {})
        print(f"power pair {i + 1}: {row['verdict']}; F2 scan ratio {scan.get('ratio', 0):.3f}, "
              f"found slower: {'F2/scan' in row['significant']}"
              f"{'; noise: ' + '; '.join(row['noise']) if row['noise'] else ''}")  # fmt: skip
        i += 1
    aa = recompared(done("aa"), work / "runs", args.rows)
    power = recompared(done("power"), work / "runs", args.rows)
    rng = np.random.default_rng(19890605)
    for label, rows in (("quiet", quiet(aa)), ("all", aa)):
        if not rows:
            continue
        any_sig = sum(bool(r["significant"]) for r in rows)
        print(f"real A/A pairs ({label}): {len(rows)}; with any significant point after Holm: "
              f"{any_sig} (goal: at most 1 of 10)")  # fmt: skip
    if quiet(done("aa", every=True)):
        rows = quiet(done("aa", every=True))
        nb = default_blocks()
        k, n = resampled_false_positives(rows, 1000, nb, rng)
        lo, hi = wilson(k, n)
        print(f"resampled A/A compares ({nb} blocks a side, drawn from {2 * len(rows)} quiet "
              f"runs' blocks): family-wise false positives {k}/{n} = {k / n:.3f} "
              f"[{lo:.3f}-{hi:.3f}] (goal: at most 0.05)")  # fmt: skip
        for blocks in (3, 10):
            cov = coverage(rows, blocks, 1000, rng)
            text = ", ".join(f"{q} {v:.3f}" for q, v in cov.items())
            print(f"coverage of the long-run F2 speedup, {blocks} blocks: {text} (goal: >= 0.93)")
    for label, rows in (("quiet", quiet(power)), ("all", power)):
        if not rows:
            continue
        point = sum("F2/scan" in r["significant"] for r in rows)
        found = sum(bool({"F2/scan", "F scan"} & set(r["significant"])) for r in rows)
        ratios = [r["points"]["F2/scan"]["ratio"] for r in rows if "F2/scan" in r["points"]]
        print(f"power ({label}): the cold scan of a 25% larger table (its F2 point or its curve "
              f"over P, under Holm over every point and curve) found slower in {found} of "
              f"{len(rows)} pairs (goal: >= 8 of 10; the F2 point alone: {point}); measured "
              "F2 scan ratios "
              f"{min(ratios):.3f}-{max(ratios):.3f}, median {np.median(ratios):.3f}")  # fmt: skip
    pool = [r for r in quiet(done("power", every=True)) if r.get("blocks", 3) >= 10]
    if pool:
        for blocks in (3, 5, 7, 10, 15, 20):
            k, n = power_against_blocks(pool, blocks, 1000, rng)
            lo, hi = wilson(k, n)
            print(f"power against blocks (resampled from {len(pool)} quiet pairs' blocks): "
                  f"{blocks} blocks a side: "
                  f"F2 scan found slower in {k}/{n} = {k / n:.3f} [{lo:.3f}-{hi:.3f}]")  # fmt: skip
    return 0


if __name__ == "__main__":
    with recorded("aa-compare"):
        sys.exit(main())
