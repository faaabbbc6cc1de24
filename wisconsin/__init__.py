"""wisconsin: speedup and scaleup benchmark after Englert, Gray, Kocher, Shah (Tandem TR 89.4)."""

__version__ = "0.1.0"


class WisconsinError(Exception):
    """An error a user can act on; the CLI prints it as one line and exits 2."""


def is_interrupt(exc: BaseException) -> bool:
    """A ^C, however it surfaced: a ^C while DuckDB runs a query in this process's main thread
    is turned by DuckDB's Python client into RuntimeError("Query interrupted"), not
    KeyboardInterrupt (DuckDB 1.x-2.x)."""
    return isinstance(exc, KeyboardInterrupt) or (
        type(exc) is RuntimeError and str(exc) == "Query interrupted"
    )
