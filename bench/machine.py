"""What this machine's page cache allows a persisting broker, measured in the same run as the brokers.

Contract: `page_cache_write(directory, size) -> {"new_file_MB/s", "rewrite_MB/s"}` writes `size` bytes in
1 MiB `os.write` calls to a new file (every page newly allocated, as a broker appending to its log does),
then writes the same range again (pages already cached), and deletes the file. No fsync: brokers leave
flushing to the OS too.

Why: on some virtual machines a page the guest has not touched recently costs the host a fault, and writing
new file pages can run at a few hundred MB/s while rewriting cached ones runs at several GB/s (measured here
with `dd`: 250-320 MB/s against 8 GB/s; at other times the same machine wrote new pages at 4 GB/s). A broker
that stores data cannot produce faster than the first figure; the mock cluster keeps data in its heap and does
not pay it. The number moves with the machine's memory state, so the harness measures it at the start and at
the end of each run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_CHUNK = 1024 * 1024


def page_cache_write(directory: Path, size: int) -> dict[str, float]:
    path = directory / f"page-cache-probe-{os.getpid()}"
    chunk = os.urandom(_CHUNK)
    chunks = max(1, size // _CHUNK)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
    try:
        rates = []
        for _ in range(2):
            os.lseek(fd, 0, os.SEEK_SET)
            t0 = time.perf_counter()
            for _ in range(chunks):
                os.write(fd, chunk)
            rates.append(chunks * _CHUNK / (time.perf_counter() - t0) / 1e6)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    return {"new_file_MB/s": rates[0], "rewrite_MB/s": rates[1]}
