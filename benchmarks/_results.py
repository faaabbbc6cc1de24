"""Each benchmark run writes its own dated result file to benchmarks/results/.

    from _results import recorded   # at the top of a script, before it drops its own directory
    ...                             # from sys.path (while run as a script, it is sys.path[0])
    if __name__ == "__main__":
        with recorded("build-system-time"):
            main()

recorded(topic) tees what the script prints on sys.stdout and sys.stderr (stderr lines
prefixed "[stderr] ") and, when the block ends, writes
benchmarks/results/YYYY-MM-DD-<topic>-HHMMSS.md (UTC start; "-2", "-3", ... if that name
exists: never overwrites). The file holds the command as run from the repository root, the
git commit (+ "-dirty" if tracked files have changes), the UTC start, the host's cores, RAM and
load, the raw output in a fenced block, then the exit status and wall time. A run that fails
(an exception, a non-zero sys.exit, Ctrl-C) still gets its file, marked FAILED; a run killed by
a signal gets none: the output is collected in the system temp dir (a killed run's stays there,
as wisconsin-<topic>-*.out) and the file only appears, complete, by an atomic link at the end. Exits raised by argparse (--help, usage errors) write
nothing, nor does a recorded script started by a recorded script (WISCONSIN_RECORDING is set for
children), nor any run with WISCONSIN_NO_RECORD=1 in the environment (for quick trials).

Only what goes through sys.stdout / sys.stderr is captured: output a child process or C code
writes straight to file descriptor 1 or 2 reaches the terminal but not the file (the scripts
capture their children's output and print what matters).
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import re
import shlex
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DISABLE_ENV = "WISCONSIN_NO_RECORD"
ACTIVE_ENV = "WISCONSIN_RECORDING"  # set while recording, so recorded children do not record


class recorded:  # a context manager, lower-case like contextlib.suppress
    """Context manager: record this run's output to a new result file named after topic.

    enabled=False (or WISCONSIN_NO_RECORD=1) makes it do nothing. After the block, .path is the
    file written (None if none was).
    """

    def __init__(self, topic: str, *, enabled: bool = True, results_dir: Path | str = RESULTS):
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", topic):
            raise ValueError(f"topic {topic!r}: use lower-case words joined by '-'")
        self.topic = topic
        self.results_dir = Path(results_dir)
        self.enabled = (
            enabled
            and os.environ.get(DISABLE_ENV, "") in ("", "0")
            and not os.environ.get(ACTIVE_ENV)
        )
        self.path: Path | None = None

    def __enter__(self) -> recorded:
        if not self.enabled:
            return self
        self._start = dt.datetime.now(dt.UTC)
        self._header = _header(self._start)  # git and /proc before the script starts its work
        self._t0 = time.perf_counter()
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._pending = {"stdout": "", "stderr": ""}
        fd, name = tempfile.mkstemp(prefix=f"wisconsin-{self.topic}-", suffix=".out")
        self._out = os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace")
        self._out_path = Path(name)
        self._streams = (sys.stdout, sys.stderr)
        self._tees = (_Tee(sys.stdout, self, "stdout"), _Tee(sys.stderr, self, "stderr"))
        sys.stdout, sys.stderr = self._tees
        os.environ[ACTIVE_ENV] = name
        return self

    def _feed(self, stream: str, text: str) -> None:
        """Whole lines of text go to the output file, in the order they were completed."""
        if os.getpid() != self._pid:  # a forked child: its output is not this run's record
            return
        with self._lock:
            if self._out.closed:
                return
            lines = (self._pending[stream] + text).split("\n")
            self._pending[stream] = lines.pop()
            for line in lines:
                self._out.write(("[stderr] " if stream == "stderr" else "") + line + "\n")
            if lines:
                self._out.flush()

    def __exit__(self, etype, exc, tb) -> bool:
        if not self.enabled:
            return False
        wall = time.perf_counter() - self._t0
        for tee, orig in zip(self._tees, self._streams, strict=True):
            tee.flush()
            if getattr(sys, tee._which) is tee:
                setattr(sys, tee._which, orig)
        os.environ.pop(ACTIVE_ENV, None)
        status, note, extra = _outcome(etype, exc, tb)
        with self._lock:
            self._out.close()
        if status is None:  # argparse's own exit (--help, a usage error): not a run
            self._out_path.unlink(missing_ok=True)
            return False
        for stream in ("stdout", "stderr"):  # unterminated last lines, then what Python prints
            self._append(stream, self._pending[stream])
        self._append("stderr", extra)
        try:
            self.path = self._write(status, note, wall)
        except OSError as e:
            print(
                f"result file not written ({e}); output kept in {self._out_path}", file=sys.stderr
            )
            return False
        self._out_path.unlink(missing_ok=True)
        lead = "\n" if any(self._pending.values()) else ""  # the terminal is mid-line
        print(f"{lead}result written to {_shown(self.path)}", file=sys.stderr)
        return False

    def _append(self, stream: str, text: str) -> None:
        if text:
            with open(self._out_path, "a", encoding="utf-8", errors="backslashreplace") as f:
                for line in text.rstrip("\n").split("\n"):
                    f.write(("[stderr] " if stream == "stderr" else "") + line + "\n")

    def _write(self, status: int, note: str, wall: float) -> Path:
        raw = self._out_path.read_text(encoding="utf-8", errors="backslashreplace")
        ticks = max((len(m) for m in re.findall(r"^`{3,}", raw, flags=re.M)), default=2)
        fence = "`" * max(3, ticks + 1)
        ok = status == 0
        end = dt.datetime.now(dt.UTC)
        text = "\n".join(
            [
                f"# {self.topic}: {self._start:%Y-%m-%d %H:%M:%S} UTC"
                + ("" if ok else f" (FAILED, exit {status})"),
                "",
                "Written by the script itself (benchmarks/_results.py); the output below is raw.",
                "",
                *self._header,
                "",
                "## Output",
                "",
                "As printed, stdout and stderr interleaved; stderr lines are prefixed `[stderr] `.",
                "",
                fence + "text",
                raw + fence,
                "",
                "## End",
                "",
                f"- exit status: {status} ({'ok' if ok else 'FAILED'}{': ' + note if note else ''})",
                f"- wall time: {wall:.2f} s (ended {end:%Y-%m-%d %H:%M:%S} UTC)",
                "",
            ]
        )
        self.results_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{self._start:%Y-%m-%d}-{self.topic}-{self._start:%H%M%S}"
        tmp = self.results_dir / f".{stem}.{os.getpid()}.partial"
        tmp.write_text(text, encoding="utf-8")
        try:
            for i in range(1, 1000):
                path = self.results_dir / (stem + (f"-{i}" if i > 1 else "") + ".md")
                try:
                    os.link(tmp, path)  # atomic, and fails rather than overwrite
                    return path
                except FileExistsError:
                    continue
                except OSError:  # no hard links here: claim the name, then replace the claim
                    try:
                        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                    except FileExistsError:
                        continue
                    os.replace(tmp, path)
                    return path
            raise OSError(f"no free name for {stem} in {self.results_dir}")
        finally:
            tmp.unlink(missing_ok=True)


class _Tee:
    """sys.stdout / sys.stderr stand-in: everything goes to the stream, and to the record
    while it is open; all else (isatty, fileno, encoding, buffer ...) is the stream's own."""

    def __init__(self, stream, rec: recorded, which: str):
        self._stream, self._rec, self._which = stream, rec, which

    def write(self, text: str) -> int:
        n = self._stream.write(text)
        self._rec._feed(self._which, text)
        return n

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, attr):
        return getattr(self._stream, attr)


def _outcome(etype, exc, tb) -> tuple[int | None, str, str]:
    """(exit status or None for argparse's exits, a note, text Python will print on stderr)."""
    if etype is None:
        return 0, "", ""
    if issubclass(etype, SystemExit):
        frames = traceback.extract_tb(tb)
        if any(Path(f.filename).name == "argparse.py" for f in frames):
            return None, "", ""
        code = exc.code
        if code is None or isinstance(code, int):
            return code or 0, "sys.exit" if code else "", ""
        return 1, "sys.exit with a message", str(code)  # Python prints the message on exit
    text = "".join(traceback.format_exception(etype, exc, tb))  # Python prints it on exit
    if issubclass(etype, KeyboardInterrupt):
        return 130, "interrupted (KeyboardInterrupt)", text
    return 1, (f"{etype.__name__}: {exc}".splitlines() or [etype.__name__])[0], text


def _header(start: dt.datetime) -> list[str]:
    script = Path(sys.argv[0]).resolve()
    shown = _shown(script)
    command = shlex.join(["python", shown, *sys.argv[1:]])
    nice = os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mem = _meminfo()
    ram = (
        f"{mem['MemTotal'] / 2**20:.1f} GiB RAM, {mem.get('MemAvailable', 0) / 2**20:.1f} GiB "
        "available (/proc/meminfo)"
        if "MemTotal" in mem
        else "RAM unknown"
    )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return [
        "- command (from the repository root):",
        "",
        "  ```sh",
        f"  {command}",
        "  ```",
        "",
        f"- commit: `{_commit()}`",
        f"- started: {start:%Y-%m-%dT%H:%M:%S}Z (UTC)",
        f"- host: {os.cpu_count()} cores (os.cpu_count), {usable} usable by this process; {ram}; "
        f"load average {load}" + (f"; niceness {nice}" if nice else ""),
        f"- platform: {platform.platform()}; Python {platform.python_version()} ({sys.executable})",
    ]


def _commit() -> str:
    """The code measured: the wisconsin checkout's commit (-dirty if changed), or the commit
    stamped into an installed wheel."""
    from wisconsin.measure.environment import git_commit

    return git_commit()


def _meminfo() -> dict[str, int]:
    """/proc/meminfo in kB, {} where there is none."""
    try:
        with open("/proc/meminfo") as f:
            return {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in f)}
    except (OSError, ValueError, IndexError):
        return {}


def _shown(path: Path) -> str:
    """path relative to the repository root where it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)
