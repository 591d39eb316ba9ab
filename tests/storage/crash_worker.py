"""Subprocess helper for the crash tests (not a test module).

Runs as a "zygote": imports everything once, then for each ``run <dir> <max_appends>`` line on stdin forks a
child that opens the log (running recovery), appends deterministic batches (content is a function of the
batch's base offset only, so the test can rebuild the expected bytes) and flushes every few appends. Lines
written to stdout: ``PID <pid>`` when a child starts, ``F <offset>`` after each flush (everything below
<offset> is durable), ``S <leo>`` with the log end offset the child found after recovery, and
``DONE <pid> <status>`` once the child is reaped (the test usually kills it with SIGKILL first).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafka.record.memory_records import MemoryRecordsBuilder  # noqa: E402

from records import set_base_offset, set_partition_leader_epoch  # noqa: E402
from storage import Log, LogConfig  # noqa: E402

CONFIG = LogConfig(segment_bytes=16384, index_interval_bytes=512, segment_index_bytes=2048)
LEADER_EPOCH = 3
BASE_TS = 1_600_000_000_000


@functools.cache
def batch_for(offset: int) -> bytes:
    """The exact bytes the log must hold for the batch starting at ``offset`` (after offset assignment)."""
    buf = bytearray(produced_batch_for(offset))
    set_base_offset(buf, 0, offset)
    set_partition_leader_epoch(buf, 0, LEADER_EPOCH)
    return bytes(buf)


@functools.cache
def produced_batch_for(offset: int) -> bytes:
    """What a producer sends for the batch that the log will place at ``offset`` (base offset 0, no epoch)."""
    n = 1 + offset % 4
    builder = MemoryRecordsBuilder(2, 0, batch_size=1 << 30)
    for i in range(n):
        value = bytes(((offset * 31 + i * 7 + j) % 251) for j in range(30 + (offset * 13) % 700))
        builder.append(BASE_TS + offset + i, b"key-%d" % (offset % 17), value)
    builder.close()
    return bytes(builder.buffer())


def _say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def child(dir: Path, max_appends: int) -> None:
    lg = Log.open(dir, CONFIG, recovery_point=0, had_clean_shutdown=False)
    _say(f"S {lg.log_end_offset}")
    for i in range(max_appends):
        lg.append_as_leader(bytearray(produced_batch_for(lg.log_end_offset)), LEADER_EPOCH, now_ms=BASE_TS)
        if i % 3 == 2:
            lg.flush()
            _say(f"F {lg.recovery_point}")
    lg.flush()
    _say(f"F {lg.recovery_point}")


def main() -> None:
    for line in sys.stdin:
        cmd, dir, max_appends = line.split()
        if cmd != "run":
            continue
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                child(Path(dir), int(max_appends))
            except BaseException as e:  # report, never fall back into the zygote loop
                _say(f"E {type(e).__name__}: {e}")
                code = 1
            os._exit(code)
        _say(f"PID {pid}")
        _, status = os.waitpid(pid, 0)
        _say(f"DONE {pid} {status}")


if __name__ == "__main__":
    main()
