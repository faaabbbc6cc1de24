"""Tandem's published DebitCredit figures (1987), which the report and the figures set ours
beside."""

# Tandem 1987 (TR 88.2), NonStop SQL, tps at 90% within 2 s: 8, 16, 32 VLX processors.
TANDEM_TPS = {8: 58, 16: 106, 32: 208}


def tandem_scaleup() -> dict[int, float]:
    """Tandem's OLTP scaleup relative to its smallest (8-processor) system, by size factor."""
    return {n // 8: tps / TANDEM_TPS[8] for n, tps in TANDEM_TPS.items()}
