"""The package's shape, read from its source with ast (the package is not imported, except by
the lazy-import test): no import cycles, layers, module sizes, a CLI that starts without the
heavy libraries, one atomic writer, one home for each magic number.

Import edges count wherever they are: inside functions, under `if TYPE_CHECKING:`, relative,
and module names given as strings (import_module/__import__ arguments, "wisconsin.x.y:Name"
factory strings, a registry's "wisconsin.x.y"), which import-linter does not see."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PKG = "wisconsin"
SRC = Path(__file__).resolve().parents[1] / PKG
BASE = SRC.parent

# Top to bottom; names in one tuple are siblings, which may not import each other.
LAYERS: list[tuple[str, ...]] = [
    ("cli",),
    ("workloads",),
    ("oltp",),
    ("measure", "reports"),
    ("analysis",),
    ("engines", "builds"),
    ("cluster",),
    ("store", "runfiles"),
    ("generator",),
]
RANK = {name: rank for rank, group in enumerate(LAYERS) for name in group}
ENTRY = "__main__"  # wisconsin/__main__.py runs the CLI: above every layer

MAX_LINES = 600
MAX_ROOT_FILES = 8
HEAVY = ("duckdb", "pyarrow", "dask", "distributed", "numpy", "scipy", "matplotlib")
ATOMIC = f"{PKG}.atomic"


# --- the package's modules and their import graph ----------------------------------------


def _rel(path: Path) -> str:
    """path as wisconsin/x/y.py, for the package under test."""
    return path.relative_to(BASE).as_posix() if path.is_relative_to(BASE) else str(path)


@functools.cache
def _modules(src: Path = SRC) -> dict[str, Path]:
    """Dotted name -> file, for every .py file of the package in src."""
    out = {}
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    """The module a dotted name imports: itself, or its longest prefix that is a module."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute name of `from {'.' * level}{name} import ...` inside module."""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts + ([name] if name else []))


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


IMPORTERS = {"import_module", "__import__", "import_string"}
# "wisconsin.x.y" (a module's name, if it is one) or "wisconsin.x.y:Name" (a factory string)
DOTTED = re.compile(rf"^{PKG}(\.[A-Za-z_]\w*)+(:[A-Za-z_][\w.]*)?$")
# where a constant that is exactly a module's name counts as naming it for import
REGISTRY_PARENTS = (
    ast.Dict,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Call,
    ast.keyword,
    ast.Assign,
    ast.AnnAssign,
)


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    path: Path
    line: int
    string: bool  # named by a string, not an import statement

    def where(self) -> str:
        kind = " (string)" if self.string else ""
        return f"{_rel(self.path)}:{self.line} {self.src} -> {self.dst}{kind}"


def _not_names(tree: ast.Module) -> set[int]:
    """ids of string constants that never name a module: docstrings, getLogger names."""
    skip = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = n.body[0] if n.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skip.add(id(first.value))
        if isinstance(n, ast.Call) and _call_name(n) == "getLogger":
            skip.update(id(a) for a in n.args)
    return skip


def _targets(module: str, path: Path, mods: dict[str, Path]) -> Iterator[tuple[str, int, bool]]:
    """(imported name, line, by string) for every import of module, wherever it is."""
    tree = _tree(path)
    is_package = path.name == "__init__.py"
    skip = _not_names(tree)
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for alias in n.names:
                yield alias.name, n.lineno, False
        elif isinstance(n, ast.ImportFrom):
            base = _relative(module, is_package, n.level, n.module) if n.level else n.module
            for alias in n.names:
                # `from B import x`: the submodule B.x if x is one, else B (x an attribute)
                sub = f"{base}.{alias.name}"
                yield (sub if sub in mods else base or ""), n.lineno, False
        elif isinstance(n, ast.Call) and _call_name(n) in IMPORTERS and n.args:
            arg = n.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                skip.add(id(arg))
                name = arg.value.split(":")[0]
                if name.startswith("."):
                    level = len(name) - len(name.lstrip("."))
                    name = _relative(module, is_package, level, name.lstrip(".") or None)
                yield name, n.lineno, True
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip:
            if not DOTTED.match(n.value):
                continue
            name, factory, _ = n.value.partition(":")
            if factory or (name in mods and isinstance(parents.get(id(n)), REGISTRY_PARENTS)):
                yield name, n.lineno, True


@functools.cache
def _edges(src: Path = SRC) -> dict[tuple[str, str], Edge]:
    """One edge per (importer, imported) pair within the package; an import statement wins
    over a string naming the same module, then the first line over later ones."""
    mods = _modules(src)
    out: dict[tuple[str, str], Edge] = {}
    for module, path in mods.items():
        for name, line, string in _targets(module, path, mods):
            if name.split(".")[0] != PKG:
                continue
            dst = _resolve(name, mods)
            if dst is None or dst == module:
                continue
            new = Edge(module, dst, path, line, string)
            old = out.get((module, dst))
            if old is None or (old.string, old.line) > (new.string, new.line):
                out[(module, dst)] = new
    return out


def _cycles(edges: dict[tuple[str, str], Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    graph: dict[str, list[str]] = {}
    for src, dst in edges:
        graph.setdefault(dst, [])
        graph.setdefault(src, []).append(dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 1000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def _shortest_cycle(comp: list[str], edges: dict[tuple[str, str], Edge]) -> list[str]:
    """A shortest path from comp's first module back to itself, inside comp."""
    inside = set(comp)
    start = comp[0]
    came: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for src, dst in sorted(edges):
            if src != v or dst not in inside:
                continue
            if dst == start:
                path = [v]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if dst not in came:
                came[dst] = v
                queue.append(dst)
    return comp


# --- 1. no import cycle --------------------------------------------------------------------


def test_no_import_cycle():
    edges = _edges()
    lines = []
    for comp in _cycles(edges):
        lines.append(f"cycle: {' -> '.join(_shortest_cycle(comp, edges))}")
        if len(comp) > 2:
            lines.append(f"  (one of {len(comp)} modules importing each other: {' '.join(comp)})")
        for (src, dst), e in sorted(edges.items()):
            if e.string and src in comp and dst in comp:
                lines.append(f"  {e.where()}")
    if lines:
        pytest.fail("import cycles:\n" + "\n".join(lines), pytrace=False)


# --- 2. layers ------------------------------------------------------------------------------


def _layer(module: str) -> str | None:
    """The layer a module belongs to; None for a root module directly in wisconsin/ (and the
    root package); ENTRY for wisconsin.__main__."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    if parts[1] == ENTRY:
        return ENTRY
    return parts[1] if parts[1] in RANK else None


def _layer_violation(src: str, dst: str) -> str | None:
    """Why src may not import dst, or None if it may."""
    if dst == PKG:
        return None  # the root package holds WisconsinError only
    if src == PKG:
        return "the root package imports nothing"
    top, bottom = _layer(src), _layer(dst)
    if bottom == ENTRY:
        return f"nothing imports {PKG}.{ENTRY}"
    if top == ENTRY or bottom is None:
        return None  # the entry point imports anything; root modules are importable by all
    if top is None:
        return f"a root module imports no layer package ({bottom})"
    if top == bottom or RANK[bottom] > RANK[top]:
        return None
    if RANK[bottom] == RANK[top]:
        return f"{top} and {bottom} are siblings"
    return f"{top} is below {bottom}"


def _layer_failures(string: bool) -> list[str]:
    return [
        f"{e.where()}: {why}"
        for (src, dst), e in sorted(_edges().items())
        if e.string == string and (why := _layer_violation(src, dst))
    ]


def test_imports_follow_the_layers():
    """cli > workloads > (measure | reports) > analysis > (engines | builds) > cluster >
    (store | runfiles) > generator: a module imports its own package or layers below."""
    bad = _layer_failures(string=False)
    if bad:
        pytest.fail("imports against the layers:\n" + "\n".join(bad), pytrace=False)


def test_registry_strings_name_only_their_own_package_or_below():
    bad = _layer_failures(string=True)
    if bad:
        msg = "module names given as strings against the layers:\n" + "\n".join(bad)
        pytest.fail(msg, pytrace=False)


# --- 3. sizes -------------------------------------------------------------------------------


def test_no_module_over_the_line_limit():
    long = []
    for path in _modules().values():
        with path.open(encoding="utf-8") as fh:
            n = sum(1 for _ in fh)
        if n > MAX_LINES:
            long.append(f"{_rel(path)}: {n} lines")
    if long:
        pytest.fail(f"modules over {MAX_LINES} lines:\n" + "\n".join(sorted(long)), pytrace=False)


MAX_FUNCTION_LINES = 80  # issue 44: a function longer than a screen does more than one thing


def _long_functions(tree: ast.Module, limit: int) -> list[tuple[str, int]]:
    """(name, lines) of every function or method, nested ones too, longer than limit
    (from its `def`, decorators not counted, to its last line)."""
    return [
        (n.name, n.end_lineno - n.lineno + 1)
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and n.end_lineno - n.lineno + 1 > limit
    ]


def test_no_function_over_80_lines():
    long = [
        f"{_rel(path)}: {name}, {n} lines"
        for path in _modules().values()
        for name, n in _long_functions(_tree(path), MAX_FUNCTION_LINES)
    ]
    assert sorted(long) == [], f"functions over {MAX_FUNCTION_LINES} lines"


def test_the_long_function_detector():
    body = "\n".join(f"    x{i} = {i}" for i in range(79))
    fits = ast.parse(f"def f():\n{body}\n")  # 80 lines with its def
    over = ast.parse(
        f"class C:\n    def g(self):\n    {body.replace(chr(10), chr(10) + '    ')}\n        y = 1\n"
    )
    assert _long_functions(fits, 80) == []
    assert _long_functions(over, 80) == [("g", 81)]


def test_few_modules_directly_in_the_package():
    root = sorted(p.name for p in SRC.glob("*.py"))
    if len(root) > MAX_ROOT_FILES:
        msg = (
            f"{len(root)} .py files directly in {PKG}/ (at most {MAX_ROOT_FILES}): {' '.join(root)}"
        )
        pytest.fail(msg, pytrace=False)


# --- 4. the CLI starts light -----------------------------------------------------------------


def test_importing_the_cli_loads_no_heavy_library():
    code = (
        f"import sys, {PKG}.cli\nprint(' '.join(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=BASE, timeout=120
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.fail(f"import {PKG}.cli fails: {last}", pytrace=False)
    if loaded := done.stdout.split():
        pytest.fail(f"import {PKG}.cli loads: {' '.join(loaded)}", pytrace=False)


# --- 5. one atomic writer --------------------------------------------------------------------

RENAMERS = {"replace", "rename", "renames", "link"}  # os.<name>(...) puts a file in place


def _publishing_calls(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(line, what) for each way of renaming or linking a file into place."""
    os_names = {"os"}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            os_names.update(a.asname for a in n.names if a.name == "os" and a.asname)
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module in ("os", "shutil"):
            for a in n.names:
                if a.name in RENAMERS or (n.module, a.name) == ("shutil", "move"):
                    yield n.lineno, f"from {n.module} import {a.name}"
        if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
            continue
        attr, recv = n.func.attr, n.func.value
        recv_name = recv.id if isinstance(recv, ast.Name) else None
        if recv_name in os_names and attr in RENAMERS:
            yield n.lineno, f"os.{attr}()"
        elif recv_name == "shutil" and attr == "move":
            yield n.lineno, "shutil.move()"
        elif attr in ("hardlink_to", "link_to"):
            yield n.lineno, f".{attr}()"
        elif (
            attr in ("replace", "rename")
            # Path.replace/rename take one argument; str.replace takes two or more,
            # dataclasses.replace and datetime.replace take keywords.
            and len(n.args) == 1
            and not n.keywords
            and not isinstance(n.args[0], ast.Starred)
            and not isinstance(recv, ast.Constant | ast.JoinedStr)
            and recv_name not in ("dataclasses", *os_names)
        ):
            yield n.lineno, f".{attr}() of a path"


def test_only_atomic_renames_or_links_files_into_place():
    bad = [
        f"{_rel(path)}:{line} {what}: publish through {ATOMIC}"
        for module, path in _modules().items()
        if module != ATOMIC
        for line, what in _publishing_calls(_tree(path))
    ]
    if bad:
        msg = "files put in place outside the atomic writer:\n" + "\n".join(bad)
        pytest.fail(msg, pytrace=False)


# --- 6. one home per magic number ------------------------------------------------------------

MAGIC = {"117": "the update's delta", "780": "the default time budget (13 min)"}


def _magic(n: ast.AST) -> str | None:
    """Which magic number node n is: the literal 117 or 780, or 13 * 60 (either order)."""
    if isinstance(n, ast.Constant) and type(n.value) in (int, float):
        return {117: "117", 780: "780"}.get(n.value)  # type: ignore[call-overload]
    if (
        isinstance(n, ast.BinOp)
        and isinstance(n.op, ast.Mult)
        and isinstance(n.left, ast.Constant)
        and isinstance(n.right, ast.Constant)
        and {n.left.value, n.right.value} == {13, 60}
    ):
        return "780"
    return None


def _definition(stmt: ast.stmt) -> tuple[str, ast.AST] | None:
    """(NAME, value) of a module-level `NAME = constant` or `NAME: type = constant`."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        target, value = stmt.target, stmt.value
    else:
        return None
    return (target.id, value) if isinstance(target, ast.Name) else None


def test_each_magic_number_has_one_home():
    homes: dict[str, list[str]] = {k: [] for k in MAGIC}
    stray: list[str] = []
    for path in _modules().values():
        tree = _tree(path)
        defining: set[int] = set()
        for stmt in tree.body:
            if (d := _definition(stmt)) and (key := _magic(d[1])):
                homes[key].append(f"{_rel(path)}:{stmt.lineno} {d[0]}")
                defining.add(id(d[1]))
                defining.update(id(c) for c in ast.walk(d[1]))
        for n in ast.walk(tree):
            if id(n) not in defining and (key := _magic(n)):
                if isinstance(n, ast.BinOp):
                    defining.update(id(c) for c in (n.left, n.right))  # 13 * 60: once
                stray.append(f"{_rel(path)}:{n.lineno} {key} ({MAGIC[key]})")
    bad = [
        f"{key} defined {len(h)} times: {', '.join(h)}" for key, h in homes.items() if len(h) > 1
    ]
    bad += [f"{s}: use the named constant" for s in sorted(stray)]
    if bad:
        pytest.fail("magic numbers outside their one home:\n" + "\n".join(bad), pytrace=False)


# --- the detectors themselves, on a made-up package -----------------------------------------

FAKE = {
    "__init__.py": "class WisconsinError(Exception):\n    pass\n",
    "workloads/__init__.py": 'WORKLOADS = {"x": "wisconsin.workloads.x"}\n',
    "workloads/x.py": "def get():\n    from wisconsin import workloads\n",
    "a.py": (
        '"""wisconsin.b is not imported by this docstring."""\n'
        "import logging\n"
        'log = logging.getLogger("wisconsin.b")\n'
        'if "wisconsin.b" == __name__:\n'  # a comparison names no import
        "    pass\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from .c import C\n"
    ),
    "b.py": "import importlib\nm = importlib.import_module('.a', __package__)\n",
    "c.py": 'FACTORY = "wisconsin.b:make"\n',
    "store/__init__.py": 'PRELOAD = ["wisconsin.engines"]\n',
    "engines/__init__.py": "from wisconsin import outputs\n",
    "outputs.py": "from wisconsin.engines import thing\n",
}


def _fake(tmp_path: Path) -> Path:
    src = tmp_path / PKG
    for name, text in FAKE.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return src


def test_the_graph_sees_function_type_checking_relative_and_string_imports(tmp_path):
    edges = _edges(_fake(tmp_path))
    found = {
        (s.removeprefix(f"{PKG}."), d.removeprefix(f"{PKG}."), e.string)
        for (s, d), e in edges.items()
    }
    assert found == {
        ("workloads", "workloads.x", True),  # a registry
        ("workloads.x", "workloads", False),  # inside a function, its own parent package
        ("a", "c", False),  # TYPE_CHECKING, relative
        ("b", "a", True),  # import_module, relative
        ("c", "b", True),  # a factory string
        ("store", "engines", True),  # a preload list
        ("engines", "outputs", False),
        ("outputs", "engines", False),
    }
    assert _cycles(edges) == [
        [f"{PKG}.a", f"{PKG}.b", f"{PKG}.c"],
        [f"{PKG}.engines", f"{PKG}.outputs"],
        [f"{PKG}.workloads", f"{PKG}.workloads.x"],
    ]


def test_the_layer_rules():
    w = f"{PKG}."
    assert _layer_violation(w + "cli", w + "generator.core") is None
    assert _layer_violation(w + "workloads.x", w + "workloads") is None
    assert _layer_violation(w + "engines.a", w + "outputs") is None  # a root module
    assert _layer_violation(w + "store", w + "engines") == "store is below engines"
    assert _layer_violation(w + "builds.a", w + "engines.b") == "builds and engines are siblings"
    assert (
        _layer_violation(w + "outputs", w + "engines")
        == "a root module imports no layer package (engines)"
    )
    assert _layer_violation(w + "__main__", w + "cli") is None
    assert _layer_violation(w + "cli", w + "__main__") == f"nothing imports {PKG}.__main__"


def test_the_publishing_detector_ignores_string_and_dataclass_replace():
    code = (
        "import os, dataclasses, shutil\n"
        "s.replace('a', 'b')\n"  # str.replace: two arguments
        "'x'.replace(y)\n"  # a string literal
        "dataclasses.replace(m, index=1)\n"
        "when.replace(tzinfo=None)\n"
        "os.replace(tmp, final)\n"  # 6
        "tmp.replace(final)\n"  # 7
        "tmp.rename(final)\n"  # 8
        "os.link(tmp, final)\n"  # 9
        "shutil.move(tmp, final)\n"  # 10
    )
    assert [line for line, _ in _publishing_calls(ast.parse(code))] == [6, 7, 8, 9, 10]


def test_the_magic_number_detector():
    found = [_magic(n) for n in ast.walk(ast.parse("a = 117\nb = 13 * 60\nc = 780.0\nd = 118\n"))]
    assert sorted(k for k in found if k) == ["117", "780", "780"]


def test_the_benchmarks_index_names_every_script():
    """benchmarks/README.md is the folder's index: every script under benchmarks/ (archive/
    included) is named there, and it names no script that is gone."""
    root = Path(__file__).resolve().parent.parent / "benchmarks"
    index = (root / "README.md").read_text()
    scripts = {p.relative_to(root).as_posix() for p in root.rglob("*.py")}
    named = set(re.findall(r"`((?:archive/)?[\w]+\.py)`", index))
    assert scripts - named == set(), "not in benchmarks/README.md"
    assert named - scripts == set(), "named in benchmarks/README.md, but not there"


# Each statistic's one home (issue 44): the t-intervals are log_t_ratio (Welch's, of a
# ratio), log_t_mean and mean_half_width (of a mean), all on t_quantile.
STATISTIC_HOMES = {
    "median": "analysis/stats.py",
    "t_quantile": "analysis/stats.py",
    "mean_half_width": "analysis/stats.py",
    "log_t_ratio": "analysis/stats.py",
    "log_t_mean": "analysis/stats.py",
    "geometric_mean": "analysis/stats.py",
    "permutation_p": "analysis/stats.py",
    "holm": "analysis/significance.py",
    "welch": "analysis/significance.py",
    "block_test": "analysis/significance.py",
}


def test_each_statistic_is_defined_once_in_analysis():
    """One median, one Holm adjustment, one Welch test, one block test, one t quantile and
    one of each t-interval (issue 44): a second definition anywhere in wisconsin/ fails, as
    does one outside analysis/. And a t distribution's quantile (`.ppf`) is taken in
    t_quantile alone, so no interval elsewhere builds its own."""
    found: dict[str, list[str]] = {}
    ppf: list[tuple[str, str, int]] = []
    for path in _modules().values():
        where = path.relative_to(SRC).as_posix()
        for fn in ast.walk(_tree(path)):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if (name := fn.name.lstrip("_")) in STATISTIC_HOMES:
                found.setdefault(name, []).append(where)
            ppf += [
                (where, fn.name, c.lineno)
                for c in ast.walk(fn)
                if isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute)
                and c.func.attr == "ppf"
            ]
    assert found == {name: [home] for name, home in STATISTIC_HOMES.items()}
    assert [(where, fn) for where, fn, _ in ppf] == [("analysis/stats.py", "t_quantile")], ppf


# Modules that render: their names say so (report, html, plots, plot, figures, document,
# timeline, compare_render), and those that only lay out a report's sections or a history
# (verdict, analysis_sections, history). They format what analysis/ computed.
RENDERING = (
    "reports/document.py",
    "reports/figures.py",
    "reports/timeline.py",
    "workloads/wisconsin/report.py",
    "workloads/wisconsin/html.py",
    "workloads/wisconsin/plots.py",
    "workloads/wisconsin/compare_render.py",
    "workloads/wisconsin/verdict.py",
    "workloads/wisconsin/analysis_sections.py",
    "workloads/wisconsin/history.py",
    "workloads/debitcredit/report.py",
    "workloads/debitcredit/plot.py",
)
# Called by any name or attribute (np.median, statistics.fmean, x.mean(), t.ppf, median):
# numpy's, the statistics module's and scipy's statistics, and analysis's own.
STATISTIC_CALLS = frozenset(
    {"median", "nanmedian", "mean", "nanmean", "fmean", "average", "gmean", "std", "stdev"}
    | {"pstdev", "var", "variance", "percentile", "quantile", "ppf", "sf", "cdf", "comb"}
    | set(STATISTIC_HOMES)
    | {"ratio_interval", "time_interval", "block_ratio_interval", "block_time_interval"}
)


def _statistics_computed(tree: ast.AST) -> list[str]:
    """Where tree imports scipy or the statistics module, or calls a statistic."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import | ast.ImportFrom):
            mods = [a.name for a in n.names] if isinstance(n, ast.Import) else [n.module or ""]
            out += [
                f"{n.lineno}: imports {m}"
                for m in mods
                if m.split(".")[0] in ("scipy", "statistics")
            ]
        elif isinstance(n, ast.Call):
            f = n.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in STATISTIC_CALLS:
                out.append(f"{n.lineno}: {ast.unparse(n)[:60]}")
    return out


def test_no_rendering_module_computes_a_statistic():
    """Issue 44: the comparison, the verdict block's figures and the history are computed in
    analysis/; a module that renders imports no scipy or statistics module and calls no
    statistic (a median, a mean, a spread, a quantile, a t quantile, a test, an interval)."""
    found = []
    for rel in RENDERING:
        path = SRC / rel
        assert path.is_file(), f"{rel} is gone: name the module that renders now"
        found += [f"{rel}:{s}" for s in _statistics_computed(_tree(path))]
    assert found == []


def test_the_statistic_detector():
    code = (
        "from scipy import stats\n"  # 1
        "import statistics as st\n"  # 2
        "a = np.median(x)\n"  # 3
        "b = xs.mean()\n"  # 4
        "c = stats.t.ppf(0.975, 3)\n"  # 5
        "d = median(p.time_median for p in ps)\n"  # 6
        "e = p.time_median + fnum(p.median_s)\n"  # attributes and other calls: not statistics
        "f = 'median'\n"
    )
    assert [s.split(":")[0] for s in _statistics_computed(ast.parse(code))] == [
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
    ]


def test_the_cli_imports_no_private_name_of_another_module():
    """Issue 44: commands imported _progress, _engine_config, ... from cli/options; a name
    shared across modules is public."""
    root = Path(__file__).resolve().parent.parent / "wisconsin" / "cli"
    private = []
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("wisconsin"):
                private += [
                    f"{path.name}: {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")  # dunders are public
                ]
    assert private == []


# --- 7. thin commands (issue 44) -------------------------------------------------------------

MAX_COMMAND_LINES = 60
CLI = SRC / "cli"


def _is_command(fn: ast.FunctionDef) -> bool:
    """Decorated by click's command or group (click.command(...), @cli.command, @group)."""
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name in ("command", "group"):
            return True
    return False


def _long_commands(tree: ast.Module, limit: int) -> list[tuple[str, int]]:
    """(name, lines from `def` to its end) of each command function over limit lines."""
    return [
        (n.name, n.end_lineno - n.lineno + 1)
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and _is_command(n)
        and n.end_lineno - n.lineno + 1 > limit
    ]


def test_no_command_function_is_long():
    """A command parses, calls one library function, prints: what takes longer is library
    work (or printing to split out), not a command's."""
    long = [
        f"{_rel(path)}: {name}, {n} lines"
        for path in sorted(CLI.rglob("*.py"))
        for name, n in _long_commands(_tree(path), MAX_COMMAND_LINES)
    ]
    assert long == [], f"command functions over {MAX_COMMAND_LINES} lines"


def _workload_comparisons(tree: ast.Module, names: tuple[str, ...]) -> list[int]:
    """Lines comparing a value against a workload's name: a string constant that is one
    (alone or in a tuple, list or set), or anything read from the registry's NAMES."""

    def names_one(n: ast.AST) -> bool:
        if isinstance(n, ast.Constant):
            return n.value in names
        if isinstance(n, ast.Tuple | ast.List | ast.Set):
            return any(names_one(e) for e in n.elts)
        return any(
            isinstance(c, ast.Name | ast.Attribute)
            and (c.id if isinstance(c, ast.Name) else c.attr) == "NAMES"
            for c in ast.walk(n)
        )

    def compared(n: ast.AST) -> list[ast.AST]:
        """What n compares a value against (a match's case value too)."""
        if isinstance(n, ast.Compare):
            return [n.left, *n.comparators]
        return [n.value] if isinstance(n, ast.MatchValue) else []

    return sorted(n.lineno for n in ast.walk(tree) if any(names_one(x) for x in compared(n)))


def _workload_names() -> tuple[str, ...]:
    """The registry's workload names (the keys of WORKLOADS in workloads/__init__.py)."""
    for stmt in _tree(SRC / "workloads" / "__init__.py").body:
        d = _definition(stmt)
        if d and d[0] == "WORKLOADS" and isinstance(d[1], ast.Dict):
            return tuple(k.value for k in d[1].keys if isinstance(k, ast.Constant))
    return ()


def test_the_cli_does_not_branch_on_a_workload():
    """What differs between workloads is the workload entry's to say (its entry points, the
    options it takes): the CLI never asks which workload it holds."""
    names = _workload_names()
    assert "wisconsin" in names and "debitcredit" in names
    found = [
        f"{_rel(path)}:{line}"
        for path in sorted(CLI.rglob("*.py"))
        for line in _workload_comparisons(_tree(path), names)
    ]
    assert found == [], "the CLI compares a value against a workload's name"


def test_the_thin_command_detectors():
    code = (
        "import click\n"
        "@click.command()\n"
        "@click.option('--x')\n"
        "def long(x):\n" + "    pass\n" * 60 + "@cli.command('short')\n"
        "def short():\n"
        "    pass\n"
        "def helper():\n" + "    pass\n" * 70 + "if w == 'debitcredit':\n"  # line 139
        "    pass\n"
        "if name != workloads.NAMES[0]:\n"  # 141
        "    pass\n"
        "if w in ('a', 'wisconsin'):\n"  # 143
        "    pass\n"
        "if w == 'bench':\n"  # a command's name is not a workload's
        "    pass\n"
        "match w:\n"
        "    case 'x' | 'debitcredit':\n"  # 148
        "        pass\n"
    )
    tree = ast.parse(code)
    assert _long_commands(tree, MAX_COMMAND_LINES) == [("long", 61)]
    assert _workload_comparisons(tree, ("wisconsin", "debitcredit")) == [139, 141, 143, 148]


def test_no_audit_module_imports_the_measuring_layer():
    """An audit judges the run file alone (issue 44: the Wisconsin audit imported the runner
    for its durability sentence): no module named audit* or rules_* imports wisconsin.measure,
    wherever the import is (a function, TYPE_CHECKING, a string)."""
    audits = [m for m in _modules() if m.rpartition(".")[2].startswith(("audit", "rules_"))]
    assert f"{PKG}.workloads.wisconsin.audit" in audits and len(audits) >= 5, audits
    bad = [
        f"{e.path.relative_to(BASE)}:{e.line} imports {dst}"
        for (src, dst), e in _edges().items()
        if src in audits and (dst == f"{PKG}.measure" or dst.startswith(f"{PKG}.measure."))
    ]
    assert bad == []
