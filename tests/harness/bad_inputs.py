"""Bad invocations of the `wisconsin` CLI as a new user makes them (issue 45): the one list
benchmarks/bad_inputs.py runs as subprocesses and tests/test_refusals.py runs in process
(tests/harness/invocations.py makes the fixtures, runs a case and judges it).

A case is a command line with {placeholders} for the fixtures (every kind of thing the tool
knows, and some it does not), what must happen (refused: exit 2, one line on stderr,
nothing created, changed or removed; or done: exit 0) and what its output must say, each
fragment case-insensitively: the kind of thing given, or the option refused.

Placeholders: {data} a data directory (F1, F2), {table} its F2, {dcdb} a DebitCredit
database, {dcdata} the directory a DebitCredit bench was given, {wrun} a Wisconsin run file,
{dcrun} and {dcrun2} DebitCredit run files, {tpdb} a TPC-C database, {tprun} and {tprun2}
TPC-C run files, {ab} an A/B file of 2 blocks a side, {journal} a
run journal, {random} a file of random bytes, {empty} an empty .json, {foreign} a JSON file
of another tool, {dir} an empty directory, {docs} a directory holding a README, {mixed} a
data directory holding a table and a file of the user's, {missing} and {new} paths that do
not exist, {full} a full 1 MiB file system (root only).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    args: str  # the command line after `wisconsin`, shell-quoted, with {placeholders}
    says: tuple[str, ...]  # what the output must hold (case-insensitive; placeholders too)
    why: str  # what is wrong: a bad value, a conflict, an option that does not apply, ...
    refused: bool = True  # False: the command must do its job (exit 0) and say `says`
    never: str | None = None  # a regular expression the output must not match
    needs: str = ""  # "root": a fixture only root can make (a full tmpfs)
    pending: str = ""  # not yet as it must be: whose files hold the fix (tests expect it)
    long: bool = False  # while not refused, it measures for minutes (tests do not run it)

    @property
    def verb(self) -> str:
        return self.args.split()[0]

    def argv(self, paths: dict[str, Path]) -> list[str]:
        """The arguments, each placeholder replaced by its fixture's path."""
        return [_filled(a, paths) for a in shlex.split(self.args)]

    def said(self, paths: dict[str, Path]) -> list[str]:
        return [_filled(s, paths) for s in self.says]


def _filled(text: str, paths: dict[str, Path]) -> str:
    return text.format(**{k: str(v) for k, v in paths.items()})


def no(args: str, *says: str, why: str, **kw) -> Case:
    return Case(args, says, why, **kw)


def ok(args: str, *says: str, why: str, **kw) -> Case:
    return Case(args, says, why, refused=False, **kw)


WK, VAL, CONFLICT = "wrong kind", "bad value", "conflicting options"
NA, MISSING, ISSUE = "option that does not apply", "missing or empty", "issue 45"
RUN_KINDS = ("wrun", "dcrun", "tprun", "ab", "journal")  # files: never a table
NAMED = {"table": "wisconsin table", "dcdb": "debitcredit database", "data": "data directory",
         "journal": "run journal", "tpdb": "tpcc database"}  # fmt: skip

# fmt: off
CASES: list[Case] = [
    # ------------------------------------------------------------------ the 13 of issue 45
    no("run --data {data} --repeat 2 --min-reps 5", "--min-reps", "--repeat", why=ISSUE),
    no("bench --workload debitcredit --preset vlx --mode shared-memory --cache warm "
       "--time-budget 60 --disk-budget 1MB",
       "--preset", "--mode", "--cache", "--time-budget", "--disk-budget", why=ISSUE),
    no("info {table} --json --no-verify --deep", "--deep", "--no-verify", why=ISSUE),
    no("report {wrun} --force", "--force", "--out", why=ISSUE),
    ok("generate --kind F --rows 1000 --partitions 3 --data {new} --quiet", "uneven", why=ISSUE),
    no("report {ab}", "a/b file", "compare", why=ISSUE),
    no("audit {ab}", "a/b file", "compare", why=ISSUE),
    no("plot {ab}", "a/b file", "compare", why=ISSUE),
    no("run --resume {dcrun}", "debitcredit", "not a wisconsin", why=ISSUE),
    no("export {dcdb} --out {new}", "debitcredit database", why=ISSUE),
    no("info {docs}", "is not a table", why=ISSUE),  # and no lock file written in docs/
    ok("report {dcrun} --format html --out {new}", "report", why=ISSUE),
    no("run --data {dir}", "no tables", why=ISSUE),  # and no lock file left in it
    no("generate --data {full}/d --kind F --rows 20000 --partitions 2 --quiet", "free",
       why=ISSUE, needs="root"),  # and neither d/ nor d/.wisconsin.lock left
    # 2 blocks a side: the smallest slowdown the test can show is capped, not "1,833x"
    ok("compare {ab}", "tested on blocks", why=ISSUE,
       never=r"smaller than (1[1-9]|[2-9][0-9]|[0-9]{3,})[0-9.,]*x"),
    # ------------------------------------------------------------------ the command itself
    no("reprot {wrun}", "no such command", "report", why=VAL),
    no("run --nosuch", "no such option", "--nosuch", why=VAL),
    no("info", "missing argument", why=MISSING),
    no("report", "missing argument", why=MISSING),
    no("export {table}", "missing option", "--out", why=MISSING),
    # ------------------------------------------------------------------ generate
    no("generate --kind H", "kind", "H", why=VAL),
    no("generate --kind ,", "kind", why=VAL),
    no("generate --kind F,G --rows 1000", "--rows", "--kind", why=CONFLICT),
    no("generate --kind F --rows -5", "rows", "positive", why=VAL),
    no("generate --kind F --rows 0", "rows", "positive", why=VAL),
    no("generate --kind F --rows 1 --partitions 4 --data {new}", "partitions", "rows", why=VAL),
    no("generate --kind F --rows lots", "--rows", why=VAL),
    no("generate --partitions 0", "--partitions", "positive", why=VAL),
    no("generate --partitions 2,,4", "--partitions", "empty item", why=VAL),
    no("generate --partitions two", "--partitions", "integers", why=VAL),
    no("generate --preset huge", "preset", "huge", why=VAL),
    no("generate --seed abc", "--seed", why=VAL),
    no("generate --jobs 0", "--jobs", why=VAL),
    no("generate --worker-data /x", "--worker-data", "--cluster", why=NA),
    no("generate --tls-ca {random}", "--tls", "--cluster", why=NA),
    no("generate --jobs 2 --cluster tcp://127.0.0.1:1", "--jobs", "--cluster", why=NA),
    no("generate --cluster notanaddress --kind F --rows 10 --partitions 1", "notanaddress",
       why=VAL),  # and no wisconsin-data/ left for its logs
    no("generate --data {random}", "--data", "file", why=WK),
    no("generate --data {table} --kind F --rows 2000 --partitions 1", "is a wisconsin table",
       why=WK),
    no("generate --data {dcdb} --kind F --rows 2000 --partitions 1", "debitcredit database",
       why=WK),
    # a table of other rows is there: never rebuilt over in silence
    no("generate --data {data} --kind F --rows 3000 --partitions 2",
       "already holds another table", why=CONFLICT),
    # ------------------------------------------------------------------ info
    *[no(f"info {{{k}}}", "a file, not a table", why=WK) for k in RUN_KINDS],
    no("info {data}", "data directory", why=WK),
    no("info {docs}/README.md", "a file, not a table", why=WK),
    no("info {dir}", "is not a table", why=WK),
    no("info {random}", "a file, not a table", why=WK),
    no("info {missing}", "no such", why=MISSING),
    no("info {table} --no-verify --deep", "--deep", "--no-verify", why=CONFLICT),
    no("info {dcdb} --json", "--json", "wisconsin tables", why=NA),
    no("info {dcdb} --no-verify", "--no-verify", "wisconsin tables", why=NA),
    no("info {table} --timeout 0", "--timeout", why=VAL),
    no("info {table} --timeout 30", "--timeout", "--cluster", why=NA),
    no("info {table} --tls-key {random}", "--tls", "--cluster", why=NA),
    # ------------------------------------------------------------------ repair
    *[no(f"repair {{{k}}}", "a file, not a table", why=WK) for k in RUN_KINDS],
    no("repair {data}", "data directory", why=WK),
    no("repair {docs}", "is not a table", why=WK),
    no("repair {dir}", "is not a table", why=WK),
    no("repair {missing}", "no such", why=MISSING),
    no("repair {dcdb} --jobs 2", "--jobs", "wisconsin tables", why=NA),
    no("repair {table} --jobs 0", "--jobs", why=VAL),
    no("repair {table} --tls-cert {random}", "--tls", "--cluster", why=NA),
    # ------------------------------------------------------------------ export
    *[no(f"export {{{k}}} --out {{new}}", "a file, not a table", why=WK) for k in RUN_KINDS],
    no("export {data} --out {new}", "data directory", why=WK),
    no("export {docs} --out {new}", "is not a table", why=WK),
    no("export {dir} --out {new}", "is not a table", why=WK),
    no("export {missing} --out {new}", "no such", why=MISSING),
    no("export {table} --out {random}", "--out", "file", why=WK),
    no("export {table} --out {table}", "is a wisconsin table", why=WK),
    no("export {table} --out {data}", "is a data directory", why=WK),
    # ------------------------------------------------------------------ run
    no("run --data {missing}", "no tables", why=MISSING),
    no("run --data {table}", "is a table", "--data {data}", why=WK),
    no("run --data {dcdb}", "debitcredit database", why=WK),
    no("run --data {dcdata}", "no tables", why=WK),
    no("run --data {random}", "--data", "file", why=WK),
    no("run --data {docs}", "no tables", why=WK),
    no("run --resume {ab}", "a/b file", why=WK),
    no("run --resume {journal}", "journal, not a run file", why=WK),
    no("run --resume {random}", "not a readable run file", why=WK),
    no("run --resume {empty}", "not a readable run file", why=WK),
    no("run --resume {foreign}", "not a run file", why=WK),
    no("run --resume {missing}", "no such", why=MISSING),
    no("run --resume {data}", "--resume", "directory", why=WK),
    no("run --resume {wrun}", "complete", why=VAL),
    no("run --resume {wrun} --mode shared-memory", "--resume", "drop --mode", why=CONFLICT),
    no("run --resume {wrun} --data {data}", "--resume", "drop --data", why=CONFLICT,
       never="--data-dir"),  # the option is --data
    no("run --data {data} --tables H", "kind", "H", why=VAL),
    no("run --data {data} --tables G", "no G tables", why=VAL),
    no("run --data {data} --partitions 4", "F4 is not generated", why=VAL),
    no("run --data {data} --queries nope", "nope", why=VAL),
    no("run --data {data} --queries ,", "--queries", why=VAL),
    no("run --data {data} --min-reps 5 --max-reps 2", "--max-reps", "--min-reps", why=CONFLICT),
    no("run --data {data} --repeat 3 --target-ci 0.2", "--target-ci", "--repeat", why=CONFLICT),
    no("run --data {data} --target-ci 0", "--target-ci", why=VAL),
    no("run --data {data} --blocks 0", "--blocks", why=VAL),
    no("run --data {data} --warmup -1", "--warmup", why=VAL),
    no("run --data {data} --time-budget 0", "--time-budget", why=VAL),
    no("run --data {data} --timeout 0", "--timeout", why=VAL),
    no("run --data {data} --memory-limit lots", "--memory-limit", why=VAL),
    no("run --data {data} --mode bogus", "--mode", "bogus", why=VAL),
    no("run --data {data} --scan-variant none", "--scan-variant", why=VAL),
    no("run --data {data} --cache lukewarm", "--cache", why=VAL),
    no("run --data {data} --order-seed x", "--order-seed", why=VAL),
    no("run --data {data} --mode shared-memory --transport dask", "--transport", why=NA),
    no("run --data {data} --mode shared-memory --cluster tcp://127.0.0.1:1", "shared-nothing",
       why=NA),
    no("run --data {data} --tls-cert {random}", "--tls", "--cluster", why=NA),
    no("run --data {data} --out {wrun}", "already exists", "never overwritten", why=WK),
    no("run --data {data} --out {random}", "--out", "file", why=WK),
    no("run --data {data} --out {table}", "--out", "is a wisconsin table", why=WK),
    # ------------------------------------------------------------------ bench
    no("bench --workload debitcredit --cluster tcp://127.0.0.1:1", "cannot connect to the "
       "scheduler at tcp://127.0.0.1:1", why=VAL),
    no("bench --workload debitcredit --branches 2 --scaled 1", "--branches", "--scaled",
       why=CONFLICT),
    *[no(f"bench --workload debitcredit --resume {{{k}}}", "not a debitcredit progress file",
         why=WK) for k in ("wrun", "dcrun", "ab", "random", "empty", "missing")],
    no("bench --workload debitcredit --resume {missing}.json.partial", "no such", why=MISSING),
    no("bench --workload debitcredit --resume {dcrun} --partitions 1", "--resume",
       "--partitions", why=CONFLICT),
    no("bench --workload debitcredit --repeat 0", "--repeat", why=VAL),
    no("bench --workload debitcredit --step-seconds 0", "--step-seconds", why=VAL),
    no("bench --workload debitcredit --partitions 0", "--partitions", why=VAL),
    no("bench --workload debitcredit --rule 99/1", "--rule", why=VAL),
    no("bench --workload debitcredit --data {random}", "--data", "file", why=WK),
    no("bench --workload debitcredit --data {table} --quiet", "inside", "wisconsin table",
       why=WK),
    no("bench --workload debitcredit --out {random} --quiet", "--out", "file", why=WK),
    no("bench --workload oltp", "--workload", "oltp", why=VAL),
    no("bench --resume {dcrun}", "--resume", "debitcredit", why=NA),
    no("bench --branches 5", "--branches", "debitcredit", why=NA),
    no("bench --rule 90/2", "--rule", "debitcredit", why=NA),
    no("bench --step-seconds 5", "--step-seconds", "debitcredit", why=NA),
    no("bench --disk-budget lots", "--disk-budget", why=VAL),
    no("bench --disk-budget 1MB", "--disk-budget", "too small", why=VAL),
    no("bench --time-budget 10", "--time-budget", why=VAL),
    no("bench --preset nope", "preset", "nope", why=VAL),
    no("bench --repeat 2 --max-reps 3", "--max-reps", "--repeat", why=CONFLICT),
    no("bench --min-reps 5 --max-reps 2", "--max-reps", "--min-reps", why=CONFLICT),
    no("bench --partitions 1,x", "--partitions", why=VAL),
    no("bench --worker-data /x", "--worker-data", "--cluster", why=NA),
    no("bench --cluster tcp://127.0.0.1:1", "--cluster", "--preset", why=NA),
    no("bench --preset tiny --mode shared-memory --cluster tcp://127.0.0.1:1", "shared-nothing",
       why=NA),  # before the disk announcement: one line
    no("bench --preset tiny --mode shared-memory --transport dask", "--transport", why=NA),
    no("bench --preset tiny --data {random}", "--data", "file", why=WK),
    no("bench --preset tiny --data {table}", "is a wisconsin table", why=WK),  # one line
    no("bench --preset tiny --out {random}", "--out", why=WK),
    no("bench --preset tiny --out {table}", "--out", "is a wisconsin table", why=WK),
    # ------------------------------------------------------------------ report
    *[no(f"report {{{k}}}", kind, why=WK) for k, kind in NAMED.items()],
    no("report {docs}", "is a directory, not a run file", why=WK),
    no("report {dir}", "is a directory, not a run file", why=WK),
    no("report {random}", "not a readable run file", why=WK),
    no("report {empty}", "not a readable run file", why=WK),
    no("report {foreign}", "not a run file", why=WK),
    no("report {missing}", "no such", why=MISSING),
    no("report {wrun} --format pdf", "--format", "pdf", why=VAL),
    no("report {wrun} --out {wrun}", "already exists", why=WK),
    no("report {wrun} --out {dir}", "--out", "directory", why=WK),
    no("report {wrun} {dcrun}", "debitcredit", "wisconsin", why=WK),
    no("report {wrun} {ab}", "a/b file", why=WK),
    # ------------------------------------------------------------------ plot
    *[no(f"plot {{{k}}}", kind, why=WK) for k, kind in NAMED.items()],
    no("plot {docs}", "is a directory, not a run file", why=WK),
    no("plot {random}", "not a readable run file", why=WK),
    no("plot {empty}", "not a readable run file", why=WK),
    no("plot {missing}", "no such", why=MISSING),
    no("plot {wrun} --out-dir {random}", "--out-dir", "file", why=WK),
    no("plot {wrun} {dcrun}", "debitcredit", "wisconsin", why=WK),
    # ------------------------------------------------------------------ compare
    no("compare {wrun}", "RUN_B", "a/b file", why=MISSING),
    no("compare {ab} --with-a {wrun}", "--with-a", why=NA),
    no("compare {ab} {ab}", "given twice", why=WK),
    no("compare {wrun} {ab}", "a/b file", why=WK),
    no("compare {wrun} {dcrun}", "debitcredit", "wisconsin", why=WK),
    no("compare {wrun} {table}", "wisconsin table", why=WK),
    no("compare {dcdb} {dcdb}", "debitcredit database", why=WK),
    no("compare {wrun} {journal}", "run journal", why=WK),
    no("compare {wrun} {missing}", "no such", why=MISSING),
    no("compare {wrun} {random}", "not a readable run file", why=WK),
    no("compare {wrun} {wrun} --fail-slower 0.5", "--fail-slower", why=VAL),
    no("compare {dcrun} {dcrun2} --fail-slower 1.1", "--fail-slower", "wisconsin", why=NA),
    no("compare {wrun} {wrun} --format html", "--format", "html", why=VAL),
    # ------------------------------------------------------------------ audit
    *[no(f"audit {{{k}}}", kind, why=WK) for k, kind in NAMED.items()],
    no("audit {docs}", "is a directory, not a run file", why=WK),
    no("audit {random}", "not a readable run file", why=WK),
    no("audit {empty}", "not a readable run file", why=WK),
    no("audit {foreign}", "not a run file", why=WK),
    no("audit {missing}", "no such", why=MISSING),
    no("audit {wrun} --format markdown", "--format", "markdown", why=VAL),
    no("audit {wrun} {dcrun}", "unexpected extra argument", why=VAL),
    # ------------------------------------------------------------------ history
    no("history {ab}", "a/b file", why=WK),
    no("history {dcrun}", "debitcredit", "not a wisconsin", why=WK),
    no("history {table}", "wisconsin table", why=WK),
    no("history {dcdb}", "debitcredit database", why=WK),
    no("history {random}", "not a readable run file", why=WK),
    no("history {missing}", "no such", why=MISSING),
    no("history {dir}", "no wisconsin run files", why=MISSING),
    no("history {wrun} --format csv", "--format", "csv", why=VAL),
    # ------------------------------------------------------------------ list
    no("list {missing}", "no such", why=MISSING),
    no("list {random}", "not a table, run file or directory", why=WK),
    no("list {empty}", "not a table, run file or directory", why=WK),
    no("list {data} --format json", "no such option", "--format", why=VAL),
    # ------------------------------------------------------------------ remove
    no("remove {missing}", "no such", why=MISSING),
    no("remove {wrun}", "run files are removed with rm", why=WK),
    no("remove {ab}", "not a table or data directory", why=WK),
    no("remove {random}", "not a table or data directory", why=WK),
    no("remove {docs}", "did not build", why=WK),
    no("remove {dir}", "holds nothing wisconsin built", why=WK),
    no("remove {mixed}", "notes.txt", "did not build", why=WK),
    no("remove {mixed}/F1 {missing}", "no such", why=MISSING),  # and F1 is still there
    no("remove {mixed}/F1 {docs}", "did not build", why=WK),  # and F1 is still there
    no("remove {table} --tls-ca {random}", "--tls", "--cluster", why=NA),
    no("remove {table} --cluster tcp://127.0.0.1:1", "scheduler", "127.0.0.1:1", why=MISSING),
    # ------------------------------------------------------------------ ab
    no("ab --b ''", "missing option", "--a", why=MISSING),
    no("ab --data {data} --a '--out x' --b ''", "--out", why=NA),
    no("ab --data {data} --a '--repeat 2' --b ''", "--repeat", why=NA),
    no("ab --data {data} --a '--resume {wrun}' --b ''", "--resume", why=NA),
    no("ab --data {data} --a \"--mode 'x\" --b ''", "--a", "quotation", why=VAL),
    no("ab --data {data} --a '--mode bogus' --b ''", "--mode", "bogus", why=VAL),
    no("ab --data {data} --blocks 1 --a '' --b ''", "--blocks", why=VAL),
    no("ab --data {data} --rounds 0 --a '' --b ''", "--rounds", why=VAL),
    no("ab --data {dir} --a '' --b '--mode shared-memory'", "no tables", why=MISSING),
    no("ab --data {data} --a '--tables H' --b ''", "kind", "H", why=VAL),
    no("ab --data {data} --out {random} --a '' --b '--mode shared-memory'", "--out", "file",
       why=WK),
    # ------------------------------------------------------------------ TPC-C's files and options
    ok("info {tpdb}", "tpc-c database", "3.3.2.4 ok", why="its own kind"),
    no("info {tpdb} --json", "--json", "tpc-c database", why=NA),
    no("repair {tpdb} --jobs 2", "--jobs", "tpc-c database", why=NA),
    no("repair {tpdb} --tls-cert {random}", "--tls", "--cluster", why=NA),
    no("repair {tpdb} --cluster tcp://127.0.0.1:1", "scheduler", "127.0.0.1:1", why=MISSING),
    no("run --data {tpdb}", "tpcc database", why=WK),
    no("run --resume {tprun}", "tpcc", "not a wisconsin", why=WK),
    no("ab --data {tpdb} --a '' --b '--mode shared-memory'", "tpcc database", why=WK),
    no("export {tpdb} --out {new}", "tpcc database", why=WK),
    no("generate --data {tpdb} --kind F --rows 2000 --partitions 1", "tpcc database", why=WK),
    no("audit {tpdb}", "tpcc database", "not a run file", why=WK),
    no("history {tprun}", "tpcc", "not a wisconsin", why=WK),
    no("report {wrun} {tprun}", "tpcc", "wisconsin", why=WK),
    no("report {tprun} --format csv", "csv", why=VAL),
    no("plot {tprun} {dcrun}", "tpcc", "debitcredit", why=WK),
    no("compare {wrun} {tprun}", "tpcc", "wisconsin", why=WK),
    no("compare {tprun} {tprun2} --force", "--force", why=NA),
    no("remove {tprun}", "run files are removed with rm", why=WK),
    no("bench --workload tpcc --preset tiny", "--preset", "tpcc", why=NA),
    no("bench --workload tpcc --branches 2", "--branches", "tpcc", why=NA),
    no("bench --workload tpcc --resume {tprun}", "--resume", "tpcc", why=NA),
    no("bench --workload tpcc --partitions 0", "--partitions", why=VAL),
    no("bench --workload tpcc --step-seconds 0", "--step-seconds", why=VAL),
    no("bench --workload tpcc --data {table} --quiet", "inside", "wisconsin table", why=WK),
]
# fmt: on
