"""How a DebitCredit run ends when something fails: the OLTP core's (wisconsin.oltp.failures)."""

from wisconsin.oltp.failures import *  # noqa: F403
from wisconsin.oltp.failures import __all__  # noqa: F401
