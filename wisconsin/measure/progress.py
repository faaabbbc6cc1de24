"""A job's progress and its time left, estimated from the times its steps were measured to
take; and what that estimate said when the job was half done, for its run file.

The runner and the bench pipelines feed a Job: the work planned (so many steps of a kind,
with a first guess of a step's seconds until one is measured) and each step as it starts
(the one before ends there: the time between two steps is the earlier one's). A step's
time left is the mean measured time of its kind, or of the kind it stands in for. A
display (the CLI's bar or its piped lines) is told the current step, the job's fraction
done and its time left; the library draws nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from wisconsin.runfiles.runfile import Estimate

# display(label, done, total): a progress callback; one whose `estimates` attribute is True
# is also given job= (the fraction of the job done, or None), left_s= (its time left) and
# most_s= (its time left if the work asks for all it may: a stop rule's most rounds)
Display = Callable[..., None]
SAY_EVERY_S = 0.25  # estimates kept for the record at most this often (a build's rows)


@dataclass
class _Kind:
    planned: float = 0.0  # units planned and not yet begun
    most: float = 0.0  # units that may yet begin (>= planned): a stop rule may ask for more
    done: float = 0.0  # units measured
    seconds: float = 0.0  # what they took
    guess_s: float | None = None  # a unit's seconds until one is measured
    like: str | None = None  # or the measured seconds per unit of this kind
    counts: list[float] = field(default_factory=list)  # each counted step's count at its end


@dataclass
class _Current:
    kind: str
    units: float
    started: float
    counted: tuple[float, float] | None = None  # (done, total) of a counted step (rows)


class Job:
    """One job's steps as they start, what is planned, and its time left."""

    def __init__(self, display: Display | None = None, clock: Callable[[], float] = time.monotonic):
        self.display, self.clock = display, clock
        self.started = clock()
        self.kinds: dict[str, _Kind] = {}
        self._current: _Current | None = None
        self.steps_measured = 0
        self.said: list[tuple[float, float, int]] = []  # (at, left, steps measured)

    # ------------------------------------------------------------------ fed by the work

    def plan(
        self,
        kind: str,
        units: float,
        each_s: float | None = None,
        like: str | None = None,
        most: float | None = None,
    ) -> None:
        """units of kind still to begin (replacing what was planned of it); each_s: a unit's
        seconds until one is measured, like: or those of that kind, once measured; most:
        the units that may yet begin if the work asks for more (default: units)."""
        k = self.kinds.setdefault(kind, _Kind())
        k.planned = max(0.0, float(units))
        k.most = max(k.planned, float(most if most is not None else units))
        if each_s is not None:
            k.guess_s = each_s
        if like is not None:
            k.like = like

    def start(
        self,
        kind: str,
        label: str,
        units: float = 1.0,
        done: int | None = None,
        total: int | None = None,
    ) -> None:
        """A step of kind begins (of `units` units: a build of P partitions is P); the step
        before it ends now. done/total: the display's count of its phase."""
        now = self.clock()
        self._end(now)
        k = self.kinds.setdefault(kind, _Kind())
        k.planned = max(0.0, k.planned - units)
        k.most = max(k.planned, k.most - units)
        self._current = _Current(kind, units, now)
        self._show(label, done, total, now)

    def count(
        self, kind: str, label: str, done: float, total: float, units: float | None = None
    ) -> None:
        """The current step's own count as it goes (rows built, windows of a warm-up): done
        of total so far, total revised as the work learns it; its time left is then at its
        own rate. Its first call starts it, a step of `units` units (default: total)."""
        c = self._current
        if c is None or c.kind != kind or c.counted is None or done < c.counted[0]:
            self.start(kind, label, float(total if units is None else units), None, None)
            c = self._current
        c.counted = (float(done), float(total))
        self._show(label, int(done), int(total), self.clock())

    def end(self, label: str = "", done: int | None = None, total: int | None = None) -> None:
        """The current step ends and no other begins (a phase's end)."""
        now = self.clock()
        self._end(now)
        if label:
            self._show(label, done, total, now)

    def _end(self, now: float) -> None:
        c, self._current = self._current, None
        if c is None:
            return
        k = self.kinds[c.kind]
        units = c.units
        if units > 0:
            k.done += units
            k.seconds += now - c.started
            self.steps_measured += 1
        if c.counted is not None:
            k.counts.append(c.counted[0])

    # ------------------------------------------------------------------ the estimate

    def per_unit(self, kind: str) -> float | None:
        """A unit of kind's seconds: its measured mean, else the kind it stands in for's,
        else its guess, else that kind's; None while none is known."""
        k = self.kinds.get(kind)
        if k is None:
            return None
        if k.done > 0:
            return k.seconds / k.done
        like = self.kinds.get(k.like) if k.like and k.like != kind else None
        if like is not None and like.done > 0:
            return like.seconds / like.done
        if k.guess_s is None and like is not None:
            return like.guess_s
        return k.guess_s

    def left_s(self, now: float | None = None, most: bool = False) -> float | None:
        """Seconds the job has left: every planned unit at its kind's seconds, and what the
        current step has left of its own (None while a kind planned has no time known);
        most: if every unit that may yet begin does."""
        now = self.clock() if now is None else now
        left = 0.0
        for name, k in self.kinds.items():
            units = k.most if most else k.planned
            if units > 0:
                each = self.per_unit(name)
                if each is None:
                    return None
                left += units * each
        c = self._current
        if c is not None:
            spent = now - c.started
            if c.counted is not None and c.counted[0] > 0 and spent >= 1.0:
                left += (c.counted[1] - c.counted[0]) * spent / c.counted[0]  # its own rate
            else:
                each = self.per_unit(c.kind)
                if each is None:
                    return None
                left += max(0.0, c.units * each - spent)
        return left

    def _show(self, label: str, done, total, now: float) -> None:
        left = self.left_s(now)
        at = now - self.started
        if left is not None and (not self.said or at - self.said[-1][0] >= SAY_EVERY_S):
            self.said.append((at, left, self.steps_measured))
        if self.display is None:
            return
        count = (done or 0, total or 0)
        if not getattr(self.display, "estimates", False):
            self.display(label, *count)
            return
        job = at / (at + left) if left is not None and at + left > 0 else None
        most = self.left_s(now, most=True) if left is not None else None
        self.display(label, *count, job=job, left_s=left, most_s=most)

    def record(self) -> Estimate | None:
        """What the estimate said at half the job (its wall time until now): the last one
        made at or before then; None if none was."""
        job_s = self.clock() - self.started
        half = [s for s in self.said if s[0] <= job_s / 2]
        if job_s <= 0 or not half:
            return None
        at, left, steps = half[-1]
        return Estimate(
            job_s=job_s,
            at_s=at,
            left_s=left,
            error=(at + left) / job_s - 1.0,
            measured_steps=steps,
        )


def job_of(progress) -> Job:
    """progress as a Job: itself, or a Job showing on the display it is (or on none)."""
    return progress if isinstance(progress, Job) else Job(progress)
