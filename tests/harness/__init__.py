"""Test harnesses, kept out of the wheel: multi-host simulation with network namespaces, damage to partition files."""
