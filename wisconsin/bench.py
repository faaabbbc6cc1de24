"""The main job: generate (or reuse) the preset's F and G tables, run all five queries at
every partition count, write the report and the figures next to the run file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wisconsin import WisconsinError, cluster, plots, report
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


def bench(
    preset: str,
    data_dir: str,
    seed: int,
    options: RunOptions,
    progress: Progress | None = None,
    worker_data: str | None = None,
    announce=None,
) -> BenchResult:
    """Generate + run + report + plot. options carries everything but the tables to use.

    With options.engine.cluster the tables are generated in place on the cluster's workers
    (worker_data: see wisconsin.cluster for where workers write). announce receives the
    local build's cost line (wisconsin.cost) before it starts.
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
        built = build_tables(data_dir, specs, progress=progress, announce=announce)
    result, path = run(options, progress=progress)
    text = report.render_report([result], "text")
    report_path = path.with_suffix(".report.txt")
    tmp = report_path.with_name(f".{report_path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(report_path)
    figures = plots.plot_run(result, path.parent, stem=path.stem)
    return BenchResult(
        run=result,
        run_path=path,
        report_path=report_path,
        report_text=text,
        figures=tuple(figures),
        tables_reused=built.reused_tables,
        generate_s=built.seconds,
    )
