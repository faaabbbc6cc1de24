"""wisconsin: speedup and scaleup benchmark after Englert, Gray, Kocher, Shah (Tandem TR 89.4)."""

__version__ = "0.1.0"

# What an error is, as the CLI's exit code says it (wisconsin/cli/exits.py maps each kind to
# its code; the library never names a number).
USAGE = "usage"  # bad input a user can correct
FAILED = "failed"  # the run failed: its audit or verdict, a partition, a wrong answer
DAMAGED = "damaged"  # a table or database whose check fails


class WisconsinError(Exception):
    """An error a user can act on; the CLI prints it as one line and exits with its kind's
    code (bad input unless a subclass says otherwise)."""

    kind = USAGE


class VerificationError(WisconsinError):
    """An answer that differs from the independently computed one: the run is void."""

    kind = FAILED


class DamagedData(WisconsinError):
    """A table or DebitCredit database whose check fails (`wisconsin repair` may fix it)."""

    kind = DAMAGED
