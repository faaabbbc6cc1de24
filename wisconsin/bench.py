"""The main job: generate (or reuse) the preset's F and G tables, run all five queries at
every partition count, write the report and the figures next to the run file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wisconsin import WisconsinError, cluster, lock, plots, report
from wisconsin.build import Progress, build_tables
from wisconsin.presets import get_preset
from wisconsin.runfile import Run
from wisconsin.runner import RunOptions, run
from wisconsin.store import TableSpec


@dataclass(frozen=True)
class BenchResult:
    run: Run
    run_path: Path
    report_path: Path
    report_text: str
    figures: tuple[Path, ...]
    tables_reused: tuple[str, ...]
    generate_s: float
    html_path: Path | None = None


# Measured: a 200,000-row partition file (table + copy, primary keys, uncompressed) is
# 93 MB, 465 bytes a row; a 1,000-row one 1.3 MB (DuckDB's fixed blocks).
BYTES_PER_ROW = 470
BYTES_PER_PARTITION = 1 << 20


@dataclass(frozen=True)
class DiskPlan:
    new_bytes: int  # partition files still to generate
    reused: tuple[str, ...]  # tables already complete in data_dir
    free_bytes: int | None  # free space where data_dir is (None: on cluster workers)


def disk_plan(specs, data_dir: str, on_cluster: bool = False) -> DiskPlan:
    """How much disk bench's tables will take that is not taken yet, and what is free."""
    import shutil

    from wisconsin.store import MANIFEST

    new, reused = 0, []
    for s in specs:
        if (Path(data_dir) / s.name / MANIFEST).is_file():
            reused.append(s.name)
        else:
            new += s.n * BYTES_PER_ROW + s.partitions * BYTES_PER_PARTITION
    where = Path(data_dir).absolute()
    while not where.exists():
        where = where.parent
    free = None if on_cluster else shutil.disk_usage(where).free
    return DiskPlan(new, tuple(reused), free)


def preset_specs(preset: str, seed: int, kinds, partitions) -> list[TableSpec]:
    p = get_preset(preset)
    return [TableSpec(k, p.rows_for(k), n, seed) for k in kinds for n in partitions]


@lock.locked("data_dir", create=True)
def bench(
    preset: str,
    data_dir: str,
    seed: int,
    options: RunOptions,
    progress: Progress | None = None,
    worker_data: str | None = None,
) -> BenchResult:
    """Generate + run + report + plot. options carries everything but the tables to use.

    With options.engine.cluster the tables are generated in place on the cluster's workers
    (worker_data: see wisconsin.cluster for where workers write).
    """
    p = get_preset(preset)
    specs = [
        TableSpec(k, p.rows_for(k), n, seed) for k in options.kinds for n in options.partitions
    ]
    eng = options.engine
    if eng.cluster:
        if options.mode != "shared-nothing":
            raise WisconsinError("--cluster needs --mode shared-nothing")
        client = cluster.connect(eng.cluster, eng.security, min(eng.timeout_s, 30.0))
        try:
            built = cluster.build_tables_on_cluster(
                data_dir, specs, client, worker_data, eng.timeout_s, progress
            )
        finally:
            client.close()
    else:
        built = build_tables(data_dir, specs, progress=progress)
    result, path = run(options, progress=progress)
    text = report.render_report([result], "text")
    report_path = path.with_suffix(".report.txt")
    tmp = report_path.with_name(f".{report_path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(report_path)
    figures = plots.plot_run(result, path.parent, stem=path.stem)
    html_path = path.with_suffix(".report.html")  # one self-contained page (issue 9)
    html_path.write_text(report.render_report([result], "html"))
    return BenchResult(
        run=result,
        run_path=path,
        report_path=report_path,
        report_text=text,
        figures=tuple(figures),
        tables_reused=built.reused_tables,
        generate_s=built.seconds,
        html_path=html_path,
    )
