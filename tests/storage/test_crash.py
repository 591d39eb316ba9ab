"""Crash safety: kill -9 a writing process at 100+ random points, torn tails, flipped bytes, a full disk."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from records import batch_headers as iter_batches
from storage import Log

WORKER = Path(__file__).with_name("crash_worker.py")
sys.path.insert(0, str(WORKER.parent))
import crash_worker  # noqa: E402

KILLS = 110


def _verify(dir: Path, durable: int) -> Log:
    """Recover the log and check every batch against the bytes the writer must have produced."""
    lg = Log.open(dir, crash_worker.CONFIG, recovery_point=0, had_clean_shutdown=False)
    assert lg.log_end_offset >= durable, f"lost flushed data: LEO {lg.log_end_offset} < flushed {durable}"
    offset = 0
    for seg in lg.segments:
        data = seg.read_all()
        for pos, h in iter_batches(data):  # raises on any partial batch
            assert h.base_offset == offset
            assert data[pos : pos + h.size] == crash_worker.batch_for(offset), f"batch {offset} differs"
            offset = h.next_offset
    assert offset == lg.log_end_offset
    return lg


def _read_line(proc: subprocess.Popen) -> str:
    line = proc.stdout.readline()
    if not line:
        raise AssertionError(f"crash worker died: {proc.stderr.read()}")
    return line.decode().strip()


def test_kill_dash_nine_at_random_points(tmp_path: Path) -> None:
    rng = random.Random(1234)
    proc = subprocess.Popen(
        [sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    durable = 0
    expected_leo = 0
    started = time.monotonic()
    killed_mid_write = 0
    total_offsets = 0
    try:
        for round in range(KILLS):
            if round % 10 == 0:
                # a fresh partition every 10 kills keeps each recovery scan (and the test) short
                dir = tmp_path / f"crash-{round // 10}"
                total_offsets += expected_leo
                durable = expected_leo = 0
            proc.stdin.write(f"run {dir} 200\n".encode())
            proc.stdin.flush()
            pid = int(_read_line(proc).split()[1])
            pending: list[str] = []
            if rng.random() < 0.2:
                time.sleep(rng.uniform(0.0, 0.01))  # likely during the child's own recovery
            else:
                # wait until recovery is done so that the kill lands among appends, rolls and flushes
                while not (line := _read_line(proc)).startswith(("S", "E", "DONE")):
                    pending.append(line)
                pending.append(line)
                time.sleep(rng.uniform(0.0, 0.03))
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            while True:
                line = pending.pop(0) if pending else _read_line(proc)
                kind, *rest = line.split()
                if kind == "S":
                    assert int(rest[0]) == expected_leo, "appends did not continue at the recovered offset"
                elif kind == "F":
                    durable = max(durable, int(rest[0]))
                elif kind == "E":
                    raise AssertionError(line)
                elif kind == "DONE":
                    killed_mid_write += os.WIFSIGNALED(int(rest[1]))
                    break
            lg = _verify(dir, durable)
            expected_leo = lg.log_end_offset
            lg.close_handles()
    finally:
        proc.stdin.close()
        proc.kill()
        proc.wait()
    assert killed_mid_write >= KILLS // 2
    assert total_offsets + expected_leo > 300
    assert time.monotonic() - started < 90


def test_torn_tail_at_every_point_of_the_last_batch(tmp_path: Path) -> None:
    """Power loss can leave any prefix of the last write: recovery must drop exactly the partial batch."""
    dir = tmp_path / "torn-0"
    lg = Log.open(dir, crash_worker.CONFIG)
    for _ in range(12):
        lg.append_as_leader(bytearray(crash_worker.produced_batch_for(lg.log_end_offset)), 3, now_ms=0)
    seg = lg.segments[-1]
    full = seg.read_all()
    last_pos, last = iter_batches(full)[-1]
    leo_before_last = last.base_offset
    lg.close_handles()
    rng = random.Random(7)
    cuts = sorted(
        {last_pos + 1, last_pos + 12, last_pos + 60, last_pos + last.size - 1}
        | {rng.randrange(last_pos + 1, last_pos + last.size) for _ in range(20)}
    )
    for cut in cuts:
        seg.log_path.write_bytes(full[:cut])
        lg = Log.open(dir, crash_worker.CONFIG, recovery_point=0)
        assert lg.log_end_offset == leo_before_last
        assert lg.segments[-1].read_all() == full[:last_pos]
        lg.close_handles()


def test_flipped_byte_truncates_that_partition_only(tmp_path: Path) -> None:
    from storage import LogManager, TopicPartition

    mgr = LogManager([tmp_path], crash_worker.CONFIG)
    mgr.startup()
    logs = {p: mgr.get_or_create_log(TopicPartition("flip", p)) for p in range(3)}
    for lg in logs.values():
        for _ in range(30):
            lg.append_as_leader(bytearray(crash_worker.produced_batch_for(lg.log_end_offset)), 3, now_ms=0)
    leos = {p: lg.log_end_offset for p, lg in logs.items()}
    victim = logs[1].segments[0]
    positions = iter_batches(victim.read_all())
    pos, h = positions[5]
    mgr.shutdown()
    # as after a crash before any flush: no clean-shutdown marker, recovery points at 0 -> everything is scanned
    (tmp_path / ".kafka_cleanshutdown").unlink()
    (tmp_path / "recovery-point-offset-checkpoint").unlink()
    data = bytearray(victim.log_path.read_bytes())
    data[pos + h.size // 2] ^= 0x40
    victim.log_path.write_bytes(data)
    mgr = LogManager([tmp_path], crash_worker.CONFIG)
    mgr.startup()
    assert mgr.get_log(TopicPartition("flip", 1)).log_end_offset == h.base_offset
    for p in (0, 2):
        lg = mgr.get_log(TopicPartition("flip", p))
        assert lg.log_end_offset == leos[p]
        assert lg.read(0, 1 << 20).records is not None
    mgr.shutdown()


_DISK_FULL_SCRIPT = r"""
import resource, signal, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {here!r})
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead of killing us
import crash_worker
from pathlib import Path
from storage import Log, LogConfig, KafkaStorageError
config = LogConfig(segment_bytes=1 << 30, segment_index_bytes=4096, index_interval_bytes=512)
lg = Log.open(Path({dir!r}), config)
resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))
errors = 0
for _ in range(400):
    leo, size = lg.log_end_offset, lg.segments[-1].size
    try:
        lg.append_as_leader(bytearray(crash_worker.produced_batch_for(leo)), 3, now_ms=0)
    except KafkaStorageError:
        errors += 1
        assert lg.log_end_offset == leo and lg.segments[-1].size == size
        assert lg.segments[-1].log_path.stat().st_size == size, "partial write not rolled back"
print(lg.log_end_offset, errors, flush=True)
"""


def test_disk_full_leaves_log_consistent(tmp_path: Path) -> None:
    dir = tmp_path / "full-0"
    script = _DISK_FULL_SCRIPT.format(root=str(WORKER.parents[2]), here=str(WORKER.parent), dir=str(dir))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    leo, errors = (int(x) for x in out.stdout.split())
    assert errors > 0 and leo > 0
    lg = _verify(dir, leo)
    assert lg.log_end_offset == leo
    lg.append_as_leader(bytearray(crash_worker.produced_batch_for(leo)), 3, now_ms=0)
    lg.close()


@pytest.mark.parametrize("clean", [True, False])
def test_reopen_after_kill_between_roll_and_snapshot(tmp_path: Path, clean: bool) -> None:
    """A roll leaves an empty new segment; reopening (clean or not) keeps offsets contiguous."""
    dir = tmp_path / "roll-0"
    lg = Log.open(dir, crash_worker.CONFIG)
    for _ in range(40):
        lg.append_as_leader(bytearray(crash_worker.produced_batch_for(lg.log_end_offset)), 3, now_ms=0)
    lg.roll()
    leo = lg.log_end_offset
    lg.close() if clean else lg.close_handles()
    lg = _verify(dir, leo)
    assert lg.log_end_offset == leo
    assert lg.append_as_leader(bytearray(crash_worker.produced_batch_for(leo)), 3, now_ms=0).first_offset == leo
