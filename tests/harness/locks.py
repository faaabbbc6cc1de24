"""Whether another process holds a POSIX (fcntl) lock on a file: F_GETLK asks without taking
one. DuckDB locks its database file this way while a connection has it open."""

from __future__ import annotations

import fcntl
import os
import struct

# struct flock on Linux x86-64/aarch64: l_type, l_whence (short), l_start, l_len (off_t),
# l_pid (pid_t), with native alignment and the trailing padding to 32 bytes.
_FLOCK = "hhqqi4x"


def posix_lock_holder(path) -> int | None:
    """The pid of a process holding a conflicting POSIX lock on path, or None (unlocked).
    Must be asked from a process other than the holder (its own locks never conflict)."""
    fd = os.open(path, os.O_RDWR)
    try:
        query = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        l_type, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))
    finally:
        os.close(fd)  # this process holds no lock on it: closing drops nothing
    return None if l_type == fcntl.F_UNLCK else pid
