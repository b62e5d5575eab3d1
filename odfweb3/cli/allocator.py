"""The CLI process's allocator: glibc's mmap threshold pinned (the CLI only; a library
leaves its host process's allocator alone).

glibc raises its mmap threshold each time a block it had mapped is freed, up to 32 MiB
(malloc(3), ``M_MMAP_THRESHOLD``: "dynamic mmap threshold"). CPython's ``read(n)``
allocates ``n`` bytes and then shrinks them, a CAR writer's and the JSON encoders'
buffers are large and short-lived: once the threshold has risen, they come from the
heap, and the long-lived per-object tables that grow between them (``DigestMap``
buckets, packed lists) keep the freed space from going back. Pinned at glibc's default
(128 KiB; setting it turns the adjustment off), a large buffer is mapped and unmapped
on its own: at 100,000 blocks the initial ``car:`` publish peaked some 9 MB lower
(bench/RESULTS.md: "object lists only when asked, glibc mmap threshold").
"""

from __future__ import annotations

import os
from typing import Final

__all__ = ["pin_mmap_threshold"]

_M_MMAP_THRESHOLD: Final = -3  # <malloc.h>
_THRESHOLD: Final = 128 * 1024  # glibc's default: the same bytes mapped as before any rise


def pin_mmap_threshold() -> bool:
    """Pin glibc's mmap threshold at its default; False where the C library is not glibc
    (or the call failed): nothing changes then."""
    try:
        libc_version = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError, AttributeError):  # not a glibc system
        return False
    if not libc_version or not libc_version.startswith("glibc"):
        return False
    import ctypes  # here: only where it applies

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, _THRESHOLD))
