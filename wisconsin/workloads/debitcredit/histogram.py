"""DebitCredit's response-time histograms are the OLTP core's (wisconsin.oltp.histogram)."""

from wisconsin.oltp.histogram import *  # noqa: F403
from wisconsin.oltp.histogram import __all__  # noqa: F401
