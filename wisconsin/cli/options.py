"""Options and parsing helpers the commands share (parse and check only: no library work)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

import click

from wisconsin import WisconsinError, engines, sqltext
from wisconsin.workloads import options as command_options

# --------------------------------------------------------------------------- parsing helpers


def parse_int_list(ctx, param, value: str | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    if any(not v.strip() for v in value.split(",")):  # "2,,4" is a typo, not "2,4"
        raise click.BadParameter(f"empty item in {value!r}: expected e.g. 1,2,4")
    try:
        items = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {value!r}") from None
    if not items or any(i <= 0 for i in items):
        raise click.BadParameter(f"expected positive integers, got {value!r}")
    return tuple(sorted(set(items)))


def parse_kinds(ctx, param, value: str) -> tuple[str, ...]:
    kinds = tuple(dict.fromkeys(k.strip().upper() for k in value.split(",") if k.strip()))
    bad = [k for k in kinds if k not in ("F", "G")]
    if bad or not kinds:
        raise click.BadParameter(f"unknown table kind {','.join(bad) or value!r}: use F, G or F,G")
    return kinds


def cluster_options(worker_data: bool):
    """--cluster and the TLS files (and --worker-data where tables are generated)."""

    def deco(fn):
        opts = [
            click.option(
                "--cluster",
                "cluster_address",
                default=None,
                metavar="ADDRESS",
                help="Dask scheduler (tcp://host:port or tls://host:port); shared-nothing only.",
            ),
            click.option("--tls-ca", type=click.Path(dir_okay=False), help="CA bundle (PEM)."),
            click.option(
                "--tls-cert", type=click.Path(dir_okay=False), help="Client certificate (PEM)."
            ),
            click.option("--tls-key", type=click.Path(dir_okay=False), help="Its private key."),
        ]
        if worker_data:
            opts.append(
                click.option(
                    "--worker-data",
                    default=None,
                    callback=duckdb_dir,
                    help="Data root on each worker host, unless the worker's "
                    "$WISCONSIN_DATA_DIR is set (default: the --data path). See docs/cluster.md.",
                )
            )
        for opt in reversed(opts):
            fn = opt(fn)
        return fn

    return deco


def engine_target(cluster_address, mode, tls_ca, tls_cert, tls_key):
    """(address, Security) for EngineConfig, or (None, None) without --cluster."""
    with usage_errors():
        return command_options.engine_target(cluster_address, mode, (tls_ca, tls_cert, tls_key))


# --------------------------------------------------------------------------- shared options

# Git-ignored, like wisconsin-data/: the repository's runs/ holds only the reference runs.
DEFAULT_OUT = "wisconsin-runs"

PRESET = click.option(
    "--preset",
    default="laptop",
    show_default=True,
    help="Table sizes: tiny, laptop, clx or vlx (the spec's Table 1).",
)
SEED = click.option(
    "--seed",
    type=int,
    default=1989,
    show_default=True,
    help="Generator seed: the same seed and sizes give the same rows.",
)
MODE = click.option(
    "--mode",
    type=click.Choice(list(engines.MODES)),
    default=engines.MODES[0],
    show_default=True,
    help="; ".join(f"{e.name}: {e.description}" for e in engines.ENGINES.values()) + ".",
)
TRANSPORT = click.option(
    "--transport",
    type=click.Choice(["direct", "dask"]),
    default="direct",
    show_default=True,
    help="shared-nothing: how timed statements reach the workers: a direct socket per "
    "partition, or a pinned Dask task each (the old path, ~15-25 ms more per statement at "
    "P = 2). A TLS cluster always uses dask (the socket is not encrypted).",
)
REPEAT = click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=None,
    help="Exactly this many timed rounds (sets --min-reps and --max-reps); DebitCredit: "
    "closed windows and passes of the stepped curve per P (default 3).",
)


def measurement_options(fn):
    """--cache, --min-reps, --max-reps, --target-ci, --blocks (run and bench)."""
    opts = [
        click.option(
            "--cache",
            type=click.Choice(["cold", "warm"]),
            default="cold",
            show_default=True,
            help="cold: every partition evicted from the OS page cache and DuckDB before each "
            "timed execution, proven by the bytes read (the paper's disk-bound tables); warm: "
            "the statement runs untimed right before, data resident.",
        ),
        click.option(
            "--min-reps",
            type=click.IntRange(min=1),
            default=15,
            show_default=True,
            help="Timed rounds at least (each round runs every table and query once).",
        ),
        click.option(
            "--max-reps",
            type=click.IntRange(min=1),
            default=30,
            show_default=True,
            help="Timed rounds at most.",
        ),
        click.option(
            "--target-ci",
            type=click.FloatRange(min=0, min_open=True),
            default=0.10,
            show_default=True,
            help="Stop once every headline ratio's 95% interval is within +- this fraction.",
        ),
        click.option(
            "--blocks",
            type=click.IntRange(min=1),
            default=15,
            show_default=True,
            help="Split the timed rounds into this many blocks of consecutive rounds (at least; "
            "--min-reps // blocks rounds each), each with fresh worker processes; intervals "
            "are computed over the blocks, so more blocks narrow them (docs/methodology.md).",
        ),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def given(ctx: click.Context, *names: str) -> list[str]:
    """The options among `names` (parameter names) the user gave, as typed (--min-reps)."""
    return [
        p.opts[0]
        for p in ctx.command.params
        if p.name in names
        and ctx.get_parameter_source(p.name) != click.core.ParameterSource.DEFAULT
    ]


def refuse_ignored(ctx: click.Context, names, why: str) -> None:
    """A UsageError naming every option among `names` the user gave: they would be
    accepted and silently ignored (`why` says what instead)."""
    ignored = given(ctx, *names)
    if ignored:
        raise click.UsageError(
            f"{', '.join(ignored)}: {why}; drop {'it' if len(ignored) == 1 else 'them'}"
        )


def refuse_with_repeat(ctx: click.Context) -> None:
    """--repeat fixes the rounds: the stop rule's options would be ignored."""
    if given(ctx, "repeat"):
        refuse_ignored(
            ctx,
            ("min_reps", "max_reps", "target_ci"),
            "--repeat runs exactly that many rounds, so the stopping rule's options do nothing",
        )


# File systems held in memory: their pages cannot be evicted, so a cold read is impossible.
UNEVICTABLE_FS = ("tmpfs", "ramfs")
MOUNTS = "/proc/self/mounts"


def file_system(path: str) -> str | None:
    """The type of the file system path is (or would be created) on; None if unknown."""
    import os

    real = os.path.realpath(path)
    best, kind = "", None
    try:
        with open(MOUNTS) as fh:
            for line in fh:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mnt = fields[1].replace("\\040", " ")
                under = real == mnt or real.startswith(mnt.rstrip("/") + "/")
                if under and len(mnt) >= len(best):
                    best, kind = mnt, fields[2]
    except OSError:
        return None
    return kind


def refuse_cold_in_memory(cache: str, data_dir: str, cluster_address) -> None:
    """--cache cold on tables a local file system keeps in memory: refused before any work
    (every timed execution would fail its proof of reading from storage)."""
    if cache != "cold" or cluster_address is not None:
        return  # a cluster's tables are on its workers' disks
    fs = file_system(data_dir)
    if fs in UNEVICTABLE_FS:
        raise click.ClickException(
            f"--cache cold needs tables on a disk: {data_dir} is on {fs}, which keeps files in "
            "memory and cannot evict them, so no read would come from storage; give a --data "
            "on a disk, or --cache warm"
        )


def duckdb_dir(ctx, param, value: str | None) -> str | None:
    """A directory whose files DuckDB opens: refused before anything is created under it
    if DuckDB would open other files than the ones named (sqltext.db_path)."""
    if value is not None:
        try:
            sqltext.db_path(value)
        except WisconsinError as exc:
            raise click.BadParameter(str(exc)) from None
    return value


def data_option(help_text: str):
    return click.option(
        "--data",
        "data_dir",
        type=click.Path(file_okay=False),
        callback=duckdb_dir,
        default="wisconsin-data",
        show_default=True,
        help=help_text,
    )


def parsed(ctx: click.Context, cls, takes: command_options.Takes | None = None):
    """The command's options as cls, the library's options object of the command (a field
    per parameter, and `given`); any given option `takes` does not take is refused."""
    given = tuple(
        (p.name, p.opts[0])
        for p in ctx.command.params
        if p.name in ctx.params
        and ctx.get_parameter_source(p.name) != click.core.ParameterSource.DEFAULT
    )
    line = takes.refusal(given) if takes is not None else None
    if line:
        raise click.UsageError(line)
    return cls(**ctx.params, given=given)


@contextlib.contextmanager
def usage_errors() -> Iterator[None]:
    """The library's refusal of options that do not go together, as click's usage error."""
    try:
        yield
    except command_options.OptionError as exc:
        raise click.UsageError(str(exc)) from None


def console(quiet: bool) -> command_options.Console:
    """Where a library function's words go: lines on standard output, progress lines on
    standard error and the progress display (neither when quiet)."""
    return command_options.Console(
        say=_echo,
        log=(lambda line: None) if quiet else (lambda line: _echo(line, err=True)),
        progress=lambda: progress_display(quiet),
    )


_LIVE: list = []  # the live bar's console, while progress_display shows one


def _echo(line: str, err: bool = False) -> None:
    """A line on standard output (err: standard error); on the terminal a live bar is on,
    printed above it (click.echo would write over the bar, which stays drawn there)."""
    if _LIVE and (err or sys.stdout.isatty()):
        _LIVE[-1].print(line, markup=False, highlight=False, soft_wrap=True)
    else:
        click.echo(line, err=err)


def print_outcome(done: command_options.Outcome) -> None:
    """A command's lines, then the one saying where its disk went and how to free it."""
    from wisconsin.workloads.inventory import disk_line

    for line in done.lines:
        click.echo(line)
    where = (done.data_dir, list(done.tables), done.run_path, done.on_cluster, done.remove_args)
    click.echo(disk_line(*where))


LOG_EVERY_S = 5.0


def _seconds(s: float) -> str:
    return f"~{s / 60:.1f} min" if s >= 90 else f"~{s:.0f} s"


def left_text(left_s: float | None, most_s: float | None = None) -> str:
    """Seconds left as the display says them ('' if unknown); most_s: the most it may take
    if the work asks for all it may (said when it is well above)."""
    if left_s is None:
        return ""
    text = f"{_seconds(left_s)} left"
    if most_s is not None and most_s > 1.25 * left_s + 30:
        text += f" (up to {_seconds(most_s)} if the intervals stay wide)"
    return text


class _Phase:
    """Where the job is in its current phase (a build, a run's rounds): callers count done
    within one phase, so a new phase starts when done goes back (or the first time). The
    total may be revised within a phase (a run's rounds, as its time budget runs out).
    Its time left is only the display's own guess, for work that no Job estimates
    (wisconsin.measure.progress: generate, repair)."""

    def __init__(self) -> None:
        import time

        self.clock = time.monotonic
        self.started, self.base, self.done, self.total = self.clock(), 0, -1, -1

    def update(self, done: int, total: int) -> bool:
        """True when this update starts a new phase."""
        new = self.total < 0 or done < self.done
        if new:
            self.started, self.base = self.clock(), done
        self.done, self.total = done, total
        return new

    def remaining(self) -> str:
        """Time left at this phase's rate so far ('' until it can be told)."""
        elapsed, did = self.clock() - self.started, self.done - self.base
        if did <= 0 or elapsed < 1.0 or self.done >= self.total:
            return ""
        return left_text(elapsed * (self.total - self.done) / did)


def _log_lines(stream) -> Callable[..., None]:
    """Progress as plain timestamped lines, for output that is not a terminal: one when a
    phase starts or ends and at most one every LOG_EVERY_S seconds in between, with the
    percentage and the time left (of the whole job where a Job estimates it)."""
    import time
    from datetime import datetime

    phase, state = _Phase(), {"at": 0.0, "finished": None}

    def update(label: str, done: int, total: int, job=None, left_s=None, most_s=None) -> None:
        now = time.monotonic()
        new, finished = phase.update(done, total), done >= total > 0
        due = now - state["at"] >= LOG_EVERY_S
        if not (new or due or (finished and not state["finished"])):
            return
        state.update(at=now, finished=finished)
        line = f"{label}: {done:,}/{total:,} ({100 * done / total:.0f}%)" if total else label
        if job is not None:
            line += f"; job {100 * job:.0f}%" + (f", {left_text(left_s, most_s)}" if left_s else "")
        elif left := phase.remaining():
            line += f", {left}"
        click.echo(f"[{datetime.now().strftime('%H:%M:%S')}] {line}", file=stream)

    update.estimates = True  # type: ignore[attr-defined]  # given the job's estimate
    return update


@contextlib.contextmanager
def progress_display(quiet: bool) -> Iterator:
    """Yields a (label, done, total) callback: on a terminal one live bar for the whole job,
    replaced in place (the current step beside it, elapsed and time left), gone when the
    job ends; timestamped log lines on stderr when it is redirected; None when quiet. Given
    a Job's estimate (job=, left_s=), the bar and the lines show the whole job's."""
    if quiet:
        yield None
        return
    if not sys.stderr.isatty():
        yield _log_lines(sys.stderr)
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[left]}"),
    )
    with Progress(*columns, transient=True, console=Console(stderr=True)) as bar:
        phase = _Phase()
        task = bar.add_task("", total=1, left="")

        def update(label: str, done: int, total: int, job=None, left_s=None, most_s=None) -> None:
            new = phase.update(done, total)
            if job is not None:  # the whole job: never reset, its elapsed the job's
                left = left_text(left_s, most_s)
                bar.update(task, description=label, completed=job, total=1, left=left)
                return
            if new:
                bar.reset(task, total=max(total, 1), completed=done)
            bar.update(
                task,
                description=label,
                completed=done,
                total=max(total, 1),
                left=phase.remaining(),
            )

        update.estimates = True  # type: ignore[attr-defined]
        _LIVE.append(bar.console)
        try:
            yield update
        finally:
            _LIVE.pop()
