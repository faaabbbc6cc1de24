"""Goldens of the CLI as it was before the package's modules moved into sub-packages.

They freeze what `wisconsin` prints (and which run files it still reads) so that the move
can be shown to change nothing. Everything goes through ``wisconsin.cli.cli`` and the
command line alone: no other module of the package is imported or patched here, because
those are the modules that move.

``test_bench_tiny_golden`` runs ``wisconsin bench --preset tiny --repeat 1`` (60-120 s on
a shared 2-core VM, so it is marked slow, but it runs by default) and compares its stdout,
after ``mask_bench``, with tests/golden/bench_tiny.txt; stderr (progress lines in the
rounds' clock-seeded order) is checked for every (round, table, query) step instead. The
golden is the masked stdout of ``python -m wisconsin bench`` at the pre-move commit; two
such runs and this test's run masked to the same text. ``mask_bench`` replaces only what
differs between two runs on one machine, or between machines:

* measured numbers: every ratio cell of the speedup/scaleup tables of our rows becomes
  ``<R>`` together with its ``h``/``b`` (harness-dominated), ``~`` (wide interval) and
  ``*`` (oversubscribed: depends on the core count) markers, which follow from timings or
  cores; a ``?`` (an answer failed verification) is kept, since it must never appear. The
  Tandem and Ideal rows are published constants and stay. The median-time, causes and
  scalability tables keep their table, query, partition and ``-`` cells; their floats
  become ``<F>``. The round trip, worker start-up, storage/memory read rates, dispatch
  times, ``bench took N s`` and the seconds of its ``time:`` line are masked;
* which points are harness-dominated follows from timings (two runs differed at scan P=2
  and join G4): the point list of the ``(h):`` note and of ``P = ... left out of the
  fits`` are masked (the lines stay: at these sizes P = 8 and 16 are always
  harness-dominated); so whether a curve has enough points to fit follows from timings
  too: the four fit cells of the scalability card become ``<FIT>`` and the fits' notes
  are dropped (CI once fitted scan F where the golden run had too few points); the ``(b):``
  note and ``Points at P = ... are fitted with more threads than cores`` appear in some
  runs and not in others, so those lines are dropped;
* the verdict block's ``noise before the run:`` line (the preflight saw this machine's load
  at that moment) is dropped;
* time: ISO timestamps, and the run file's ``<stamp>-<host>`` name;
* the machine: free disk, the build estimate's duration, workers and memory (from cores
  and RAM), host name, core counts, RAM, the DuckDB memory limit (from RAM), CPU model,
  OS, the git commit, library versions, the stream counts of the storage probe (1 and one
  per core), and the ``Memory:`` lines that say whether the kernel has free page
  reporting or DAMON pageout (present on some machines only);
* paths: the --data and --out directories become ``<DATA>`` and ``<OUT>``;
* column widths, which follow the masked values: runs of 2+ spaces become two spaces and
  the dashes of a table's rule become ``---`` per column.

The verdict block bench prints (one screen: the full report is in the file it names): the
ratio cell and the share of the bound of each query row, the core count, the failed rules
of ``audit: fail`` and the sentence on why the curve bends are masked (with their wrapped
lines), as is the disk the bench's tables and files hold in its last line.

Kept: the order of every line, every heading and its rule, query and table names,
partition counts, row counts, table sizes, the notes' words, the Tandem numbers, the
verdict words (``too few points``, ``not recorded``, ``bound not available``...), the
count of figures and the estimated size of the tables.

The run-file tests feed two run files written by the pre-move code
(tests/fixtures/mainline/, see its README.md) to ``report`` (text and json) and ``audit``,
and compare the exit codes and the outputs with what the pre-move code gave (the goldens
beside the fixtures). Report and audit only read the run file, so nothing is masked; the
json report is compared parsed, floats to 9 significant digits.

The same tests read two run files written just before issue 44 (tests/fixtures/before-44/,
its README.md says how), and also compare their markdown and csv reports and Wisconsin's
verdict block: the issue turned sentences into fields and moved code between layers, and
must change nothing a reader sees.

WISCONSIN_REGEN_GOLDEN=1 rewrites the golden files (only after an intended change).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.exits import completed
from wisconsin.cli import cli

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
REGEN = os.environ.get("WISCONSIN_REGEN_GOLDEN") == "1"

# Run files written by the pre-move code (commit d8272e34679591f1b9a62f8f7c14739b4b0f374e;
# tests/fixtures/mainline/README.md says how), their schema version, and the exit codes
# that code gave for `report`, `report --format json` and `audit` of each.
FIXTURES = {
    "mainline/wisconsin-run.json": {"schema": 2, "report": 0, "json": 0, "audit": 1},
    "mainline/debitcredit-run.json": {"schema": 1, "report": 0, "json": 0, "audit": 1},
    # written by commit c44ccba, the last before issue 44 moved prose into fields and
    # commands into the workloads (tests/fixtures/before-44/README.md): also their
    # markdown and csv reports
    "before-44/wisconsin-run.json": {"schema": 2, "report": 0, "json": 0, "audit": 1},
    "before-44/debitcredit-run.json": {"schema": 2, "report": 0, "json": 0, "audit": 1},
}

QUERY_LABELS = ("Table Scan", "Select & Insert", "Average", "Update", "Join")
_FLOAT = re.compile(r"\d+\.\d+")
# A ratio cell: '1.93', '1.93 [1.85-2.01]', '(0.77)h', with markers ~ * ? ! after it.
_RATIO = re.compile(r"\(?\d+\.\d+(?: \[\d+\.\d+-\d+\.\d+\])?\)?[hb]?([~*?!]*)")
_QUERY_ROW = re.compile(rf"^({'|'.join(map(re.escape, QUERY_LABELS))})\b")


def _invoke(args: list[str]):
    """The CLI's result; a crash fails here, not as exit code 1 (CliRunner's code for an
    exception, which is also what `audit` exits with when a rule fails)."""
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.output,
        result.exception,
    )
    return result


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if REGEN:
        path.write_text(text)
    assert text == path.read_text()


def _ratio_cell(m: re.Match) -> str:
    return "<R>" + ("?" if "?" in m.group(1) else "")


def mask_bench(text: str, data: str | os.PathLike, out: str | os.PathLike) -> str:
    """The bench's stdout without what varies between runs and machines (module docstring)."""
    text = text.replace(str(Path(out).absolute()), "<OUT>")
    text = text.replace(str(Path(data).absolute()), "<DATA>")
    text = re.sub(
        r"\d{8}T\d{6}Z-[^\s/]*?-(shared-nothing|shared-memory)", r"<STAMP>-<HOST>-\1", text
    )
    text = re.sub(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", "<TIME>", text)
    lines = []
    section = ""
    dropping = False
    raw = text.split("\n")
    for i, line in enumerate(raw):
        nxt = raw[i + 1] if i + 1 < len(raw) else ""
        if nxt and set(nxt) == {"="} and line:
            section = line
        # header and trailer
        line = re.sub(r"[\d.]+ [KMGT]?B free", "<FREE> free", line)
        line = re.sub(
            r"~[\d.]+ (s|min|h) to build with \d+ workers?, ~[\d.]+ [KMGT]?B peak",
            "~<DURATION> to build with <N> workers, ~<MEM> peak",
            line,
        )
        if line.startswith("Hosts:"):
            line = re.sub(
                r"^Hosts:(\s+)\S+ \(\d+ cores, [\d.]+ GiB,",
                r"Hosts:\1<HOST> (<N> cores, <MEM>,",
                line,
            )
        line = re.sub(r"^Cores:(\s+)\d+ usable on \S+$", r"Cores:\1<N> usable on <HOST>", line)
        line = re.sub(r"^Cores:(\s+)\d+$", r"Cores:\1<N>", line)
        line = re.sub(r"^(CPU|OS):(\s+).*$", r"\1:\2<\1>", line)
        if line.startswith("Versions:"):
            line = re.sub(r"\(git [^)]*\)", "(git <COMMIT>)", line)
            line = re.sub(r"\b(DuckDB|Python|pyarrow|numpy|dask) [^\s,]+", r"\1 <V>", line)
        line = re.sub(r"memory limit \S+$", "memory limit <MEM>", line)
        if line.startswith("Memory:") and section == "Wisconsin speedup and scaleup report":
            continue  # free page reporting / DAMON pageout: a property of the host kernel
        line = re.sub(r"^Round trip:(\s+)[\d.]+ ms", r"Round trip:\1<MS> ms", line)
        line = re.sub(r"workers started in [\d.]+ s", "workers started in <S> s", line)
        line = re.sub(r"^bench took \d+ s", "bench took <S> s", line)
        line = re.sub(r"^estimate: .*$", "estimate: <ESTIMATE>", line)  # timings (issue 45)
        if line.startswith("time: "):  # where the bench's time went (issue 45): seconds
            line = re.sub(r"\b[\d.]+ s\b", "<S> s", line)
        if line.startswith("noise before the run:"):
            continue  # the preflight's findings: this machine's load at that moment
        if line.startswith("disk: tables "):
            line = re.sub(r"[\d.]+ [KMGT]?B\b", "<SIZE>", line)
        # the verdict block: its numbers and the sentences built from them
        if section == "Verdict":
            if line.startswith("  ") and not line.startswith("  wisconsin report"):
                if dropping:
                    continue  # a wrapped line of a masked sentence
            else:
                dropping = line.startswith(("audit: ", "why it bends"))
            line = re.sub(r"^(\S+) on \d+ cores;", r"\1 on <N> cores;", line)
            line = re.sub(r"^(audit: (pass|fail)) .*$", r"\1 (<RULES>)", line)
            line = re.sub(r"^why it bends.*$", "why it bends: <WHY>", line)
            if line.startswith("bound: "):
                line = re.sub(r"\d+%", "<PCT>", line)
            if _QUERY_ROW.match(line):
                cells = re.split(r" {2,}", line)
                cells[1] = "<R>"
                cells[-1] = re.sub(r"^\d+%$", "<PCT>", cells[-1])
                line = "  ".join(cells)
        # the speedup and scaleup tables and their notes
        elif section.startswith(("Speedup (F tables)", "Scaleup (G tables)")):
            if line.startswith("(b):"):
                continue
            line = re.sub(r"(not a headline number: ).*\.$", r"\1<POINTS>.", line)
            if row := _QUERY_ROW.match(line):
                label = row.group(0)
                line = label + _RATIO.sub(_ratio_cell, line[len(label) :])
        elif section.startswith(("Median elapsed time", "Causes of bending")):
            if not line.startswith(("Coordinator", "Efficiency", "Start delay", "Interference")):
                line = _FLOAT.sub("<F>", line)
        elif section == "Machine profile":
            line = re.sub(r"^(Storage read|Memory read):(\s+)[\d.]+ GB/s", r"\1:\2<F> GB/s", line)
            line = re.sub(r"P=(\d+) [\d.]+", r"P=\1 <F>", line)
            line = re.sub(r"the best of \[[\d, ]+\]", "the best of [<STREAMS>]", line)
            line = re.sub(r"\((\d+: \d+ MB/s(, )?)+\)$", "(<RATES>)", line)
        elif section == "Scalability card":
            if line.startswith("Points at P = "):
                continue
            if _QUERY_ROW.match(line):
                cells = re.split(r" {2,}", _FLOAT.sub("<F>", line))
                cells[2:6] = ["<FIT>"] * len(cells[2:6])
                line = "  ".join(cells)
            if re.search(r" [FG]: (Amdahl|Gustafson|USL): ", line):
                continue  # a fit's note (too few points, no fit) follows from the timings
            line = re.sub(
                r": P = [\d,]+ left out of the fits", ": P = <PS> left out of the fits", line
            )
        # column widths follow the masked values
        if line and set(line) <= {"-", " "} and "--" in line:
            line = re.sub(r"-+", "---", line)
        line = re.sub(r" {2,}", "  ", line)
        lines.append(line)
    return "\n".join(lines)


def test_mask_bench_hides_whether_a_curve_had_enough_points_to_fit():
    card = "Scalability card\n================\n"
    row = "Table Scan  speedup  {}  too few points  too few points  too few points  4: 0.1  x"
    fitted = card + row.format("1 [0-1]") + "\n"
    unfitted = card + row.format("too few points") + "\n"
    unfitted += "Table Scan F: Amdahl: too few points: 1 beyond P0, Amdahl needs 2.\n"
    assert mask_bench(fitted, "/d", "/o") == mask_bench(unfitted, "/d", "/o")
    assert "<FIT>" in mask_bench(fitted, "/d", "/o")


@pytest.mark.slow
def test_bench_tiny_golden(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    args = ["bench", "--preset", "tiny", "--repeat", "1", "--data", str(data), "--out", str(out)]
    result = _invoke(args)
    assert completed(result), (result.output, result.stderr)  # 1 round: the audit fails
    _golden("bench_tiny.txt", mask_bench(result.stdout, data, out))
    # stderr: timestamped progress lines, piped: one as each phase starts and ends and at
    # most one every LOG_EVERY_S seconds between, naming the step then running (issue 45:
    # a line per step was hundreds of lines a bench)
    steps = re.findall(
        r"^\[\d\d:\d\d:\d\d\] (shared-nothing [^:]+: [FG]\d+/\w+): ", result.stderr, re.M
    )
    expected = {
        f"shared-nothing {r}: {k}{p}/{q}"
        for r in ("warm-up round", "round 1")
        for k in "FG"
        for p in (1, 2)  # tiny's P (issue 45: sized so its audit can pass)
        for q in ("scan", "select", "average", "update", "join")
    }
    assert steps and set(steps) <= expected and len(steps) < len(expected) / 2, steps
    assert "F1, F2, G1, G2: 4,900,000/4,900,000 (100%)" in result.stderr
    # one run file, its report beside it
    runs = sorted(out.glob("*.json"))
    assert len(runs) == 1 and runs[0].with_suffix(".report.txt").exists()
    # one disk figure, announced before the build, within 10% of what the tables then take
    (said,) = re.findall(r"^bench: about ([\d.]+) (MB|GB) of tables", result.stdout, re.M)
    said_bytes = float(said[0]) * (1e6 if said[1] == "MB" else 1e9)  # cost.size: decimal
    used = sum(f.stat().st_size for f in data.glob("[FG]*/part-*.duckdb"))
    assert abs(said_bytes - used) <= 0.10 * used, (said, used)


def _expect(path: Path, text: str) -> str:
    """The golden beside a fixture, rewritten first when WISCONSIN_REGEN_GOLDEN=1."""
    if REGEN:
        path.write_text(text)
    return path.read_text()


def _rounded(x):
    """JSON with every float to 9 significant digits: the json report's floats come out of
    numpy/scipy arithmetic, whose last bits may differ between library builds."""
    if isinstance(x, float):
        return float(f"{x:.9g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


@pytest.fixture(params=sorted(FIXTURES))
def mainline(request):
    """(path, expected exit codes) of one run file written before the move."""
    path = request.config.rootpath / "tests/fixtures" / request.param
    return path, FIXTURES[request.param]


def test_mainline_fixture_is_the_recorded_version(mainline):
    path, expected = mainline
    raw = json.loads(path.read_text())
    assert raw["schema_version"] == expected["schema"]
    assert raw.get("workload", "wisconsin") == path.stem.removesuffix("-run")


def test_mainline_report_text(mainline):
    """`report --full` is the pre-move report, after the verdict block it now opens with
    (Wisconsin; a workload without one prints the pre-move report alone)."""
    path, expected = mainline
    result = _invoke(["report", "--full", str(path)])
    assert result.exit_code == expected["report"], (result.output, result.exception)
    assert result.stderr == ""
    # a report only reads its run file: nothing of it depends on this machine or the time
    body = result.stdout
    if path.stem.startswith("wisconsin") and path.parent.name == "mainline":
        head, _, body = body.partition("\n\n")
        assert head.startswith("Verdict\n=======\n"), head
    assert body == _expect(path.with_suffix(".report.txt"), body)


def test_mainline_report_json(mainline):
    path, expected = mainline
    result = _invoke(["report", "--format", "json", str(path)])
    assert result.exit_code == expected["json"], (result.output, result.exception)
    assert result.stderr == ""
    golden = _expect(path.with_suffix(".report.json"), result.stdout)
    assert _rounded(json.loads(result.stdout)) == _rounded(json.loads(golden))


def test_mainline_audit(mainline):
    path, expected = mainline
    result = _invoke(["audit", str(path)])
    assert result.exit_code == expected["audit"], (result.output, result.exception)
    assert result.stderr == ""
    assert result.stdout == _expect(path.with_suffix(".audit.txt"), result.stdout)


@pytest.mark.parametrize("fmt", ["markdown", "csv"])
@pytest.mark.parametrize("name", ["wisconsin-run.json", "debitcredit-run.json"])
def test_before_44_report_formats(request, name, fmt):
    """The markdown and csv reports of a run file written before issue 44, unchanged."""
    path = request.config.rootpath / "tests/fixtures/before-44" / name
    result = _invoke(["report", "--format", fmt, str(path)])
    assert result.exit_code == 0, (result.output, result.exception)
    assert result.stderr == ""
    suffix = {"markdown": ".report.md", "csv": ".report.csv"}[fmt]
    assert result.stdout == _expect(path.with_suffix(suffix), result.stdout)
