"""The exit codes of every command, in one table: the CLI maps a library error's kind
(wisconsin.USAGE, FAILED, DAMAGED) to its code here, and docs/cli.md prints this table
(`wisconsin cli-reference`; a test fails when the two disagree)."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from wisconsin import DAMAGED, FAILED, USAGE, interrupts, sqltext

OK, INTERRUPTED = "ok", "interrupted"

# (code, kind, what it means, and what a user meets): the one place the numbers live
TABLE = (
    (0, OK, "done", "the command did its job; a run or bench whose audit passes"),
    (1, FAILED, "the audit or the verdict failed; files kept",
     "`run` and `bench` (their run file fails its audit: the last line names the failed "
     "rules), `audit` (a FAIL line each), `compare --fail-slower` (the last line names the "
     "slower points and curves); or a run stopped by a failure under it (a DebitCredit "
     "partition died, a wrong answer: the last line says what)"),
    (2, USAGE, "usage or bad input; nothing created",
     "an unknown option, a bad value, options that do not go together or one that would be "
     "ignored, the wrong kind of file or directory: one line on stderr, never a traceback"),
    (3, DAMAGED, "damaged data: a table or database failing its check",
     "a Wisconsin table or a DebitCredit database that fails its check, or holds an "
     "interrupted update (`info`, `repair`, and `run`, `bench`, `generate` before they use "
     "it); `wisconsin repair` rebuilds a damaged Wisconsin table"),
    (130, INTERRUPTED, "interrupted (^C)", "the last line says what was kept and how to go on"),
)  # fmt: skip
CODE = {kind: code for code, kind, _, _ in TABLE}


def code_of(exc: BaseException) -> int:
    """A library error's exit code, from its kind (bad input unless it says otherwise)."""
    return CODE[getattr(exc, "kind", USAGE)]


def exit_failed(line: str) -> NoReturn:
    """The last line of a run whose audit or verdict failed (files kept), and its code; a
    ^C Python discarded on the way is still a ^C (130, saying what was kept)."""
    interrupts.check()
    click.echo(sqltext.shown(line), err=True)  # one line, even where a path holds a newline
    sys.exit(CODE[FAILED])


def exit_unless_audited(workload, run_path) -> None:
    """After a run or bench: exit 1 when its run file fails its workload's audit, the last
    line naming the failed rules (the file is kept); nothing when every rule passes."""
    failed = [r.name for r in workload.audit_file(run_path) if not r.ok]
    if failed:
        exit_failed(
            f"audit: fail ({', '.join(failed)}); the run file is kept: `wisconsin audit "
            f"{run_path}` says why"
        )


def markdown() -> list[str]:
    """The table as docs/cli.md shows it: short cells, each code's details below."""
    import textwrap

    rows = [f"| {code} | {kind} | {short} |" for code, kind, short, _ in TABLE]
    details = [
        line
        for code, kind, _, detail in TABLE
        for line in textwrap.wrap(f"- {code} ({kind}): {detail}.", 100, subsequent_indent="  ")
    ]
    return ["## Exit codes", "", "Every command exits with one of these:", "",
            "| code | kind | meaning |", "|---:|---|---|", *rows, "", *details, ""]  # fmt: skip
