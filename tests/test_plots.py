import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures"))
from make_fixture_runs import run_from_times  # noqa: E402

from wisconsin import WisconsinError  # noqa: E402
from wisconsin.runfiles.runfile import load, save  # noqa: E402
from wisconsin.workloads.wisconsin.plots import plot_files, plot_run  # noqa: E402

FIX = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    # Plot a copy placed in a temp dir: plots land next to the run file by default.
    d = tmp_path_factory.mktemp("plots")
    save(load(FIX / "run_v2.json"), d / "myrun.json")
    return d, plot_files([d / "myrun.json"])


def test_plots_written_next_to_run_file(written):
    d, paths = written
    names = {p.name for p in paths}
    for q in ("scan", "select", "average", "update", "join"):
        for kind in ("speedup", "scaleup"):
            assert f"myrun-{kind}-{q}.png" in names and f"myrun-{kind}-{q}.svg" in names
    assert "myrun-overview.png" in names and "myrun-overview.svg" in names
    for q in ("scan", "select", "average", "update", "join"):  # one timeline per query
        assert f"myrun-timeline-{q}.png" in names and f"myrun-timeline-{q}.svg" in names
    for p in paths:
        assert p.parent == d and p.stat().st_size > 1000
    assert not list(d.glob(".*tmp*"))  # temp names were renamed away


def test_png_and_svg_are_real(written):
    _, paths = written
    png = next(p for p in paths if p.suffix == ".png")
    svg = next(p for p in paths if p.suffix == ".svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()[:2000]


def test_single_repetition_and_out_dir(tmp_path):
    run = run_from_times({("F", 1, "scan"): [2.0], ("F", 2, "scan"): [1.0]}, cores=2)
    paths = plot_run(run, tmp_path / "out", stem="one")
    assert {p.name for p in paths} == {
        "one-speedup-scan.png",
        "one-speedup-scan.svg",
        "one-overview.png",
        "one-overview.svg",
    }


def test_bad_run_file_is_wisconsin_error(tmp_path):
    with pytest.raises(WisconsinError, match="version 99"):
        plot_files([FIX / "bad_version.json"], tmp_path)


def _cli(*args):
    from click.testing import CliRunner

    from wisconsin.cli import cli

    return CliRunner().invoke(cli, list(args))


def test_cli_plot_prints_paths(tmp_path):
    run = run_from_times({("G", 2, "average"): [1.0, 1.1], ("G", 4, "average"): [1.2, 1.1]})
    save(run, tmp_path / "r.json")
    res = _cli("plot", str(tmp_path / "r.json"), "--out-dir", str(tmp_path / "figs"))
    assert res.exit_code == 0, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 4 and all(Path(line).is_file() for line in lines)


@pytest.mark.parametrize("name", ["bad_version.json", "does-not-exist.json"])
def test_cli_plot_bad_file_is_one_line_exit_2(name, tmp_path):
    res = _cli("plot", str(FIX / name), "--out-dir", str(tmp_path))
    assert res.exit_code == 2
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output


def test_pooled_runs_plot_once(tmp_path):
    for name, k in (("a", 1.0), ("b", 1.2)):
        save(
            run_from_times({("F", 1, "scan"): [2.0, 2.1], ("F", 2, "scan"): [k, k]}),
            tmp_path / f"{name}.json",
        )
    paths = plot_files([tmp_path / "a.json", tmp_path / "b.json"], tmp_path / "out")
    assert {p.name for p in paths} == {
        f"a-pooled2-{n}.{e}" for n in ("speedup-scan", "overview") for e in ("png", "svg")
    }


def test_schema1_timeline_without_dispatch_clock(tmp_path):
    from wisconsin.reports.timeline import timeline_figures

    run = run_from_times(
        {("F", 1, "scan"): [2.0, 2.1], ("F", 2, "scan"): [1.0, 1.1]},
        engine={("F", 1, "scan"): [1.9], ("F", 2, "scan"): [0.9, 0.95]},
    )
    ((name, fig),) = timeline_figures(run)
    assert name == "timeline-scan"
    assert "dispatch clock not recorded" in fig.axes[0].get_title()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["F1", "F2 p0", "F2 p1"]


def _scan_run(tmp_path, name="r", **kw):
    run = run_from_times({("F", 1, "scan"): [2.0, 2.1], ("F", 2, "scan"): [1.0, 1.1]}, **kw)
    return save(run, tmp_path / f"{name}.json")


def test_cli_plot_refuses_an_existing_figure_and_writes_nothing(tmp_path):
    """A user's file under a figure's name is never replaced: one line naming it, exit 2,
    no other figure written (it once was silently overwritten, exit 0)."""
    path = _scan_run(tmp_path)
    figs = tmp_path / "figs"
    figs.mkdir()
    precious = figs / "r-overview.png"
    precious.write_text("my precious\n")
    res = _cli("plot", str(path), "--out-dir", str(figs))
    assert res.exit_code == 2, res.output
    (line,) = res.output.strip().splitlines()
    assert (
        line == f"Error: {precious} already exists; not overwriting it (plot --force replaces it)"
    )
    assert precious.read_text() == "my precious\n"
    assert [p.name for p in figs.iterdir()] == ["r-overview.png"]


def test_replotting_is_refused_unless_force(tmp_path):
    path = _scan_run(tmp_path)
    first = plot_files([path])
    before = {p: p.stat().st_mtime_ns for p in first}
    res = _cli("plot", str(path))
    assert res.exit_code == 2 and "already exists" in res.output
    assert {p: p.stat().st_mtime_ns for p in first} == before
    (tmp_path / "r-overview.png").write_text("old\n")
    res = _cli("plot", str(path), "--force")
    assert res.exit_code == 0, res.output
    assert sorted(Path(line) for line in res.output.split()) == sorted(first)
    assert (tmp_path / "r-overview.png").read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.glob(".*tmp*"))


def test_two_runs_of_one_stem_into_one_directory_are_refused(tmp_path):
    a = _scan_run(tmp_path / "a", seed=1)
    b = _scan_run(tmp_path / "b", seed=2)  # another configuration: its own figures
    with pytest.raises(WisconsinError, match="two outputs would be written to"):
        plot_files([a, b], tmp_path / "out", force=True)
    assert not (tmp_path / "out").exists()


def _interrupt_on_call(n, real):
    calls = []

    def fake(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    return fake


@pytest.mark.parametrize("where", ["drawing", "publishing"])
def test_ctrl_c_in_plot_leaves_no_figure_and_says_so(tmp_path, monkeypatch, where):
    """All or nothing: a ^C takes back the figures this plot wrote, so "no figure was written"
    is true (it once said "nothing was written" and left 2-7 figures)."""
    import os

    from matplotlib.figure import Figure

    path = _scan_run(tmp_path)
    figs = tmp_path / "figs"
    if where == "drawing":
        monkeypatch.setattr(Figure, "savefig", _interrupt_on_call(3, Figure.savefig))
    else:
        monkeypatch.setattr(os, "link", _interrupt_on_call(3, os.link))
    res = _cli("plot", str(path), "--out-dir", str(figs))
    assert res.exit_code == 130, res.output
    assert res.output.strip() == "interrupted; no figure was written"
    assert not figs.exists()  # neither figures nor temporary files, nor the directory it made


def test_ctrl_c_in_plot_force_names_the_files_it_replaced(tmp_path, monkeypatch):
    import os

    path = _scan_run(tmp_path)
    first = plot_files([path])
    monkeypatch.setattr(os, "replace", _interrupt_on_call(3, os.replace))
    res = _cli("plot", str(path), "--force")
    assert res.exit_code == 130, res.output
    assert res.output.strip() == (
        f"interrupted; 2 figure files were already replaced: {first[0]}, {first[1]}"
    )
    assert sorted(tmp_path.iterdir()) == sorted([path, *first])


def _after(real, exc):
    """real, then exc: a ^C arriving as real returns."""

    def fake(*args, **kwargs):
        real(*args, **kwargs)
        raise exc

    return fake


@pytest.mark.parametrize("where", ["published", "printing", "check"])
def test_ctrl_c_after_plot_published_names_the_figures(tmp_path, monkeypatch, where):
    """A ^C once the figures are renamed into place (as write_figures returns, while their
    paths are printed, or a discarded ^C raised again after the command) leaves them all: the
    line names them (it said "no figure was written")."""
    import click

    from wisconsin import interrupts
    from wisconsin.workloads.wisconsin import plots

    path = _scan_run(tmp_path)
    figs = tmp_path / "figs"
    if where == "published":
        monkeypatch.setattr(plots, "write_figures", _after(plots.write_figures, KeyboardInterrupt))
    elif where == "printing":
        real_echo, printed = click.echo, []

        def echo(message=None, *args, **kwargs):
            if not printed:
                printed.append(message)
                raise KeyboardInterrupt
            real_echo(message, *args, **kwargs)

        monkeypatch.setattr(click, "echo", echo)
    else:
        monkeypatch.setattr(interrupts, "check", _after(lambda: None, KeyboardInterrupt))
    res = _cli("plot", str(path), "--out-dir", str(figs))
    assert res.exit_code == 130, res.output
    on_disk = sorted(figs.iterdir())
    assert len(on_disk) == 4 and all(p.stat().st_size > 0 for p in on_disk)
    *printed, line = res.output.strip().splitlines()  # the paths, if printed before the ^C
    assert sorted(map(Path, printed)) == (on_disk if where == "check" else [])
    assert line.startswith("interrupted; 4 figure files were already written: ")
    assert sorted(Path(p) for p in line.split(": ", 1)[1].split(", ")) == on_disk


def _after_call(n, real):
    """real; on its n-th call, a ^C right after it returns."""
    calls = []

    def fake(*args, **kwargs):
        calls.append(1)
        done = real(*args, **kwargs)
        if len(calls) == n:
            raise KeyboardInterrupt
        return done

    return fake


@pytest.mark.parametrize("force", [False, True])
def test_ctrl_c_right_after_a_rename_is_counted(tmp_path, monkeypatch, force):
    """A ^C between a figure's rename and its noting: without --force it is taken back with
    the others (it once stayed, beside "no figure was written"); with --force it is named."""
    import os

    path = _scan_run(tmp_path)
    figs = tmp_path / "figs"
    first = plot_files([path], figs) if force else []
    name = "replace" if force else "link"
    monkeypatch.setattr(os, name, _after_call(3, getattr(os, name)))
    res = _cli("plot", str(path), "--out-dir", str(figs), *(["--force"] if force else []))
    assert res.exit_code == 130, res.output
    if force:
        assert res.output.strip() == (
            "interrupted; 3 figure files were already replaced: " + ", ".join(map(str, first[:3]))
        )
        assert sorted(figs.iterdir()) == sorted(first)
    else:
        assert res.output.strip() == "interrupted; no figure was written"
        assert not figs.exists()


def _boxes_over_data(fig) -> list[str]:
    """Every legend or text box of a rendered figure that overlaps an axes' data area."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    areas = [ax.get_window_extent(renderer) for ax in fig.axes]
    boxes = [(f"legend of figure {i}", lg) for i, lg in enumerate(fig.legends)]
    titles = {id(t): t for t in [fig._suptitle, fig._supxlabel, *fig.texts] if t is not None}
    boxes += [(f"text {t.get_text()!r}", t) for t in titles.values() if t.get_text()]
    for ax in fig.axes:
        if ax.get_legend() is not None:
            boxes.append((f"legend of {ax.get_title()!r}", ax.get_legend()))
        boxes += [(f"text {t.get_text()!r} in {ax.get_title()!r}", t) for t in ax.texts]
    bad = []
    extents = [(name, artist.get_window_extent(renderer)) for name, artist in boxes]
    for i, (name, box) in enumerate(extents):
        for area in areas:
            if box.overlaps(area):
                bad.append(f"{name} over the data of an axes at {area.bounds}")
        # nor over each other (the caption under the legend)
        bad += [f"{name} over {other}" for other, b in extents[:i] if box.overlaps(b)]
    return bad


@pytest.mark.parametrize("fixture", ["run_v2.json", "run_a.json"])  # calibrated, and not
def test_no_legend_or_note_is_drawn_over_data(fixture):
    from wisconsin.workloads.wisconsin.plots import figures

    run = load(FIX / fixture)
    figs = figures(run)
    assert any(name == "overview" for name, _ in figs)
    for name, fig in figs:
        assert _boxes_over_data(fig) == [], name
        # a figure of ratios says what its lines are: one shared legend
        if not name.startswith("timeline-"):
            assert len(fig.legends) == 1, name
            assert all(ax.get_legend() is None for ax in fig.axes), name


def test_a_missing_bound_is_said_in_the_caption_not_across_the_axis():
    from wisconsin.workloads.wisconsin.plots import figures

    figs = dict(figures(load(FIX / "run_a.json")))  # schema 1: no calibration
    for name in ("overview", "speedup-scan"):
        texts = [figs[name]._supxlabel.get_text()]
        assert any("bound not available" in t for t in texts), (name, texts)
        assert not any(t.get_text() for ax in figs[name].axes for t in ax.texts), name
