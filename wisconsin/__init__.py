"""wisconsin: speedup and scaleup benchmark after Englert, Gray, Kocher, Shah (Tandem TR 89.4)."""

__version__ = "0.1.0"


class WisconsinError(Exception):
    """An error a user can act on; the CLI prints it as one line and exits 2."""


class VerificationError(WisconsinError):
    """An answer that differs from the independently computed one: the run is void."""
