"""The options of the commands a workload serves, each command's as one frozen object the CLI
parses into (a field per option, named as its parameter), and which options a workload takes:
its registry entry declares them (`Takes`), and any other given is refused in one line, not
ignored. Light on purpose: the CLI imports it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from wisconsin import WisconsinError

# (parameter, option as typed) of each option given on the command line, in the command's order
Given = tuple[tuple[str, str], ...]


class OptionError(WisconsinError):
    """Options that do not go together: the CLI says it as a usage error (exit 2)."""


@dataclass(frozen=True)
class Takes:
    """The options of a command a workload reads; any other given is refused: by its own
    line if `own` has one (the first given), else all together by `refused`, where {given}
    is those options as typed and {it} "it" or "them"."""

    options: frozenset[str]  # parameter names
    refused: str
    own: tuple[tuple[str, str], ...] = ()  # (parameter, line)

    def refusal(self, given: Given) -> str | None:
        """The line refusing what `given` holds that this workload does not take; None if
        it takes it all."""
        own = dict(self.own)
        for name, _ in given:
            if name in own:
                return own[name]
        refused = [typed for name, typed in given if name not in self.options]
        if not refused:
            return None
        return self.refused.format(
            given=", ".join(refused), it="it" if len(refused) == 1 else "them"
        )


@dataclass(frozen=True, kw_only=True)
class _Parsed:
    """What every command's options object holds besides its options: which the user gave;
    and --cluster with its TLS files (every command with an options object has them)."""

    given: Given = ()
    cluster_address: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    def given_options(self, *names: str) -> list[str]:
        """The options among `names` (parameters) the user gave, as typed (--min-reps)."""
        return [typed for name, typed in self.given if name in names]

    @property
    def tls(self) -> tuple[str | None, str | None, str | None]:
        return self.tls_ca, self.tls_cert, self.tls_key


@dataclass(frozen=True)
class BenchOptions(_Parsed):
    """`wisconsin bench` as parsed. Each workload reads the options its entry's BENCH_TAKES
    names; the others keep their defaults (the CLI refuses them when given)."""

    workload: str
    data_dir: str
    out: str
    partitions: tuple[int, ...] | None
    seed: int
    repeat: int | None
    quiet: bool
    # Wisconsin
    preset: str | None
    mode: str
    cache: str
    min_reps: int
    max_reps: int
    target_ci: float
    blocks: int
    transport: str
    time_budget: float | None
    disk_budget: int
    worker_data: str | None
    # DebitCredit
    branches: int
    scaled_tps: float | None
    step_seconds: float | None
    resume_path: str | None
    rule: str


@dataclass(frozen=True)
class RunCommandOptions(_Parsed):
    """`wisconsin run` (and each side of `wisconsin ab`) as parsed."""

    data_dir: str
    mode: str
    kinds: tuple[str, ...]
    partitions: tuple[int, ...] | None
    query_list: str | None
    scan_variant: str
    cache: str
    min_reps: int
    max_reps: int
    target_ci: float
    blocks: int
    repeat: int | None
    transport: str
    time_budget: float | None
    warmup: int
    order_seed: int | None
    out: str
    memory_limit: str | None
    timeout: float
    quiet: bool
    resume_path: str | None


@dataclass(frozen=True)
class InfoOptions(_Parsed):
    """`wisconsin info` as parsed."""

    table_dir: str
    no_verify: bool = False
    deep: bool = False
    as_json: bool = False
    timeout: float = 600


@dataclass(frozen=True)
class RepairOptions(_Parsed):
    """`wisconsin repair` as parsed."""

    table_dir: str
    jobs: int | None = None
    quiet: bool = False


@dataclass(frozen=True)
class Console:
    """Where a command's words go, as the CLI shows them."""

    say: Callable[[str], None] = print  # a line on standard output
    log: Callable[[str], None] = lambda line: None  # a progress line (standard error)
    # the progress display, entered around the work it shows: yields a (label, done,
    # total) callback, or None
    progress: Callable[[], contextlib.AbstractContextManager] = lambda: contextlib.nullcontext()


def shared_fields(source: Any, target: type) -> dict[str, Any]:
    """The fields of `source` that the dataclass `target` has too, by name: what one options
    object hands the next without listing them again."""
    names = {f.name for f in fields(source)}
    return {f.name: getattr(source, f.name) for f in fields(target) if f.name in names}


def checked_max_reps(min_reps: int, max_reps: int, given: bool) -> int:
    """--max-reps as given, refused below --min-reps (before anything is built); left at its
    default, at least --min-reps."""
    if not given:
        return max(min_reps, max_reps)
    if max_reps < min_reps:
        raise OptionError(
            f"Invalid value for '--max-reps': {max_reps} is below --min-reps {min_reps}"
        )
    return max_reps


def engine_target(cluster_address, mode, tls: Sequence[str | None]):
    """(address, Security) for EngineConfig, or (None, None) without --cluster."""
    if cluster_address is None:
        if any(tls):
            raise OptionError("--tls-ca/--tls-cert/--tls-key need --cluster")
        return None, None
    from wisconsin import engines
    from wisconsin.cluster import resolve_target

    engines.check_cluster(mode, cluster_address)
    return resolve_target(cluster_address, *tls)


def engine_config(mode, partitions, memory_limit, timeout, cluster_address, tls, transport):
    """The EngineConfig of a command's --mode, --memory-limit, --timeout, --cluster, TLS
    files and --transport, for tables of `partitions`."""
    from wisconsin.engines import default_memory_limit
    from wisconsin.engines.base import EngineConfig

    address, security = engine_target(cluster_address, mode, tls)
    if not memory_limit and address:
        from wisconsin.cluster import WORKER_MEMORY_LIMIT

        # Decided on each worker, from its own memory limit: not the client's RAM.
        memory_limit = WORKER_MEMORY_LIMIT
    return EngineConfig(
        memory_limit=memory_limit or default_memory_limit(mode, partitions),
        memory_fraction=None if memory_limit else 0.6,  # default: RAM split per table's P
        timeout_s=timeout,
        cluster=address,
        security=security,
        transport=transport,
    )


@dataclass(frozen=True)
class Outcome:
    """What a command did, as the CLI prints it: its lines, then where its disk went
    (wisconsin.workloads.inventory.disk_line of these)."""

    lines: tuple[str, ...]
    data_dir: Path  # where its tables are
    tables: tuple[Path, ...]  # the tables it used
    run_path: Path  # the run file it wrote
    on_cluster: bool = False
    remove_args: str = ""  # what `wisconsin remove` of its tables needs too (--cluster ...)
