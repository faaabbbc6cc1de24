"""Workloads the tool measures. DebitCredit (OLTP scaleup) lives in `debitcredit/`."""
