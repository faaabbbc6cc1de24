"""Paths a user gives are never SQL (issue 43, finding 1): every verb on data paths holding
quotes, a semicolon, a newline and a space either works with the name as given or is refused
in one line (exit 2), and nothing is written outside the data directory. Before the fix the
issue's injection string made `run` write pwned.csv and create a stray DuckDB file."""

from __future__ import annotations

import ast
import contextlib
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.exits import completed
from wisconsin import WisconsinError
from wisconsin.cli import cli
from wisconsin.sqltext import db_path, ident, shown

INJECTION = "P/inj/q' AS p9; COPY (SELECT 42 AS x) TO 'pwned.csv'; ATTACH 'z"
HOSTILE = {
    "injection": INJECTION,
    "apostrophe": "it's",
    "mixed": 'a "b"; c\ne f',  # double quote, semicolon, newline, space
}
ROWS = "2000"
WISCONSIN = Path(__file__).resolve().parent.parent / "wisconsin"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A working directory with an F1 table under each hostile data path."""
    root = tmp_path_factory.mktemp("hostile")
    for data in HOSTILE.values():
        res = _cli(root, "generate", "--kind", "F", "--rows", ROWS, "--partitions", "1",
                   "--data", data, "--quiet")  # fmt: skip
        assert res.exit_code == 0, res.output
    return root


def _cli(root: Path, *args: str):
    with contextlib.chdir(root):  # relative paths (and an injected 'pwned.csv') land in root
        return CliRunner().invoke(cli, list(args))


def _nothing_stray(root: Path) -> None:
    """No file outside the data directories: no pwned.csv, no stray DuckDB file."""
    homes = [root / d for d in HOSTILE.values()]
    stray = [
        f
        for f in root.rglob("*")
        if not f.is_dir() and not any(h == f or h in f.parents for h in homes)
    ]
    assert stray == []
    assert not list(root.rglob("pwned.csv"))


@pytest.mark.parametrize("name", HOSTILE)
def test_generate_again_finds_the_table_under_its_own_name(root, name):
    data = HOSTILE[name]
    res = _cli(root, "generate", "--kind", "F", "--rows", ROWS, "--partitions", "1",
               "--data", data)  # fmt: skip
    assert res.exit_code == 0, res.output
    assert f"{Path(data) / 'F1'}: 2,000 rows in 1 partition (already built)" in res.output
    _nothing_stray(root)


@pytest.mark.parametrize("deep", [False, True], ids=["info", "info-deep"])
@pytest.mark.parametrize("name", HOSTILE)
def test_info(root, name, deep):
    res = _cli(root, "info", str(Path(HOSTILE[name]) / "F1"), *(["--deep"] if deep else []))
    assert res.exit_code == 0, res.output
    assert "verified: every partition matches the manifest" in res.output
    _nothing_stray(root)


@pytest.mark.parametrize("name", HOSTILE)
def test_repair(root, name):
    res = _cli(root, "repair", str(Path(HOSTILE[name]) / "F1"))
    assert res.exit_code == 0, res.output
    _nothing_stray(root)


@pytest.mark.parametrize("name", HOSTILE)
def test_export(root, name):
    import pyarrow.parquet as pq

    out = Path(HOSTILE[name]) / "parquet"
    res = _cli(root, "export", str(Path(HOSTILE[name]) / "F1"), "--out", str(out))
    assert res.exit_code == 0, res.output
    assert pq.read_metadata(root / out / "part-000.parquet").num_rows == 2000
    _nothing_stray(root)


def _run(root: Path, data: str, mode: str) -> Path:
    """A tiny run of `mode` on data's F1; its run file (inside data)."""
    out = Path(data) / f"runs-{mode}"
    res = _cli(root, "run", "--data", data, "--mode", mode, "--tables", "F", "--queries",
               "select", "--repeat", "1", "--blocks", "1", "--cache", "warm", "--quiet",
               "--out", str(out))  # fmt: skip
    assert completed(res), res.output  # 1 round: its audit fails (exit 1)
    (run_file,) = (root / out).glob("*.json")
    return run_file


def _read_back(root: Path, run_file: Path) -> None:
    """report and audit of the run: the report works; the audit gives its verdict (a run
    of one repetition fails rules, exit 1), no traceback."""
    rep = _cli(root, "report", str(run_file))
    assert rep.exit_code == 0, rep.output
    aud = _cli(root, "audit", str(run_file))
    assert aud.exit_code in (0, 1) and "rules pass" in aud.output, aud.output
    _nothing_stray(root)


@pytest.mark.parametrize("name", HOSTILE)
def test_run_shared_memory_report_and_audit(root, name):
    """The issue's injection: ATTACH '{path}' ran the COPY and created P/inj/q."""
    _read_back(root, _run(root, HOSTILE[name], "shared-memory"))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["injection", "mixed"])
def test_run_shared_nothing_report_and_audit(root, name):
    _read_back(root, _run(root, HOSTILE[name], "shared-nothing"))


@pytest.mark.slow
def test_debitcredit_bench_info_repair_and_check(root):
    """The DebitCredit database under the injection path: bench, info, repair and the
    independent check (its own ATTACH, with no wisconsin import) all read it."""
    from wisconsin.workloads.debitcredit.check import independent_check

    data = Path(INJECTION) / "dc"
    res = _cli(root, "bench", "--workload", "debitcredit", "--partitions", "1", "--branches",
               "2", "--step-seconds", "0.3", "--repeat", "1", "--data", str(data), "--out",
               str(Path(INJECTION) / "dc-runs"), "--quiet")  # fmt: skip
    assert completed(res), res.output
    (db,) = (root / data / "debitcredit").iterdir()
    for verb in ("info", "repair"):
        res = _cli(root, verb, str(db.relative_to(root)))
        assert res.exit_code == 0 and "verified" in res.output, res.output
    ok, lines = independent_check(str(db))
    assert ok, lines
    _nothing_stray(root)


def test_an_error_naming_a_path_with_a_newline_is_one_line(root):
    res = _cli(root, "info", str(Path(HOSTILE["mixed"]) / "F2"))
    assert res.exit_code == 2
    assert res.output.splitlines() == ['Error: a "b"; c\\ne f/F2: no such table directory']


# --------------------------------------------------------------------------- refused paths


@pytest.mark.parametrize(
    "args",
    [
        ["generate", "--kind", "F", "--rows", ROWS, "--partitions", "1", "--data", "{}"],
        ["info", "{}/F1"],
        ["info", "{}/F1", "--deep"],
        ["repair", "{}/F1"],
        ["export", "F1", "--out", "{}"],
        ["run", "--data", "{}", "--mode", "shared-memory", "--queries", "select"],
        ["bench", "--workload", "debitcredit", "--partitions", "1", "--data", "{}"],
    ],
    ids=lambda a: " ".join(a[:2]) if a[0] == "bench" else a[0] + " --deep" * ("--deep" in a),
)
@pytest.mark.parametrize("bad", ["c\\d", "why?", "new\nline\\x"])
def test_a_path_duckdb_would_misread_is_refused_in_one_line(tmp_path, args, bad):
    """DuckDB opens c/d for c\\d and reads '?...' as options: before, generate named
    .../c/d/F1/part-000.duckdb.tmp in its error. Now one line naming the path as given,
    exit 2, before anything is created."""
    res = _cli(tmp_path, *[a.replace("{}", bad) for a in args])
    assert res.exit_code == 2, res.output
    # CliRunner shows click's usage lines too; `wisconsin` prints the error line alone
    (line,) = [x for x in res.output.splitlines() if x.startswith("Error:")]
    assert shown(os.path.join(tmp_path, bad)) in line and "choose a path without" in line
    assert list(tmp_path.iterdir()) == []


def test_the_refusal_is_one_line_from_the_command(tmp_path):
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "wisconsin", "generate", "--kind", "F", "--data", "c\\d"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == [
        f"Error: Invalid value for '--data': {tmp_path}/c\\d: DuckDB reads a backslash in a file "
        "name as '/', so it cannot keep its files under this path; choose a path without a "
        "backslash (see 'wisconsin generate --help')"
    ]
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- the helper


def test_db_path_is_absolute_and_not_normalized(tmp_path):
    with contextlib.chdir(tmp_path):
        assert db_path("md:x/../y") == f"{tmp_path}/md:x/../y"  # never read as a prefix
    assert db_path(Path("/a/it's")) == "/a/it's"
    with pytest.raises(WisconsinError, match=r"^/a/b\\c: DuckDB reads a backslash"):
        db_path("/a/b\\c")


def test_ident_doubles_double_quotes():
    import duckdb

    con = duckdb.connect()
    name = 'x"; DROP TABLE t; --'
    con.execute(f"CREATE TABLE {ident(name)} (v INT)")
    assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == [(name,)]


_PATHLIKE = ("path", "file", "dir", "tmp", "txid", "limit", "value")


def _sql_calls(tree):
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("execute", "sql", "query")
            and n.args
        ):
            yield n


def test_no_sql_text_is_built_from_a_path_or_a_value():
    """Every statement given to DuckDB: no f-string field between quotes (a value must be a
    bound parameter), none that formats a path; no ad-hoc quoting outside sqltext; every
    file DuckDB opens passes db_path."""
    bad = []
    for path in sorted(WISCONSIN.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(WISCONSIN.parent)
        for call in _sql_calls(tree):
            for s in ast.walk(call.args[0]):
                if not isinstance(s, ast.JoinedStr):
                    continue
                parts = s.values
                for i, v in enumerate(parts):
                    if not isinstance(v, ast.FormattedValue):
                        continue
                    before = (
                        parts[i - 1].value if i and isinstance(parts[i - 1], ast.Constant) else ""
                    )
                    after = (
                        parts[i + 1].value
                        if i + 1 < len(parts) and isinstance(parts[i + 1], ast.Constant)
                        else ""
                    )
                    text = ast.unparse(v.value).lower()
                    if str(before).endswith(("'", '"')) or str(after).startswith(("'", '"')):
                        bad.append(f"{where}:{s.lineno}: a quoted field {{{text}}}")
                    names = [
                        getattr(x, "id", None) or getattr(x, "attr", "") for x in ast.walk(v.value)
                    ]
                    if any(w in str(x).lower() for x in names for w in _PATHLIKE):
                        bad.append(f"{where}:{s.lineno}: a path or value formatted {{{text}}}")
        for n in ast.walk(tree):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr == "replace"
                and [getattr(a, "value", None) for a in n.args] == ["'", "''"]
            ):
                bad.append(f"{where}:{n.lineno}: quoting by hand; use wisconsin.sqltext")
            if (
                isinstance(n, ast.Call)
                and ast.unparse(n.func) == "duckdb.connect"
                and n.args
                and not isinstance(n.args[0], ast.Constant)
                and not (
                    isinstance(n.args[0], ast.Call) and ast.unparse(n.args[0].func) == "db_path"
                )
            ):
                bad.append(f"{where}:{n.lineno}: duckdb.connect of a path not through db_path")
    assert bad == [], bad
