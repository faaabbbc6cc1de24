"""Test and benchmark harnesses (multi-host simulation with network namespaces)."""
