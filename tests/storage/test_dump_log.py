"""kafka-dump-log equivalent: batch/record output, indexes, checkpoints, codec round trips, hostile input."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecordsBuilder

from records import Record
from storage import dump_log as dl
from storage.dump_log import DumpOptions

from .conftest import encode_batch

REPO = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000_000


def kp_batch(base_offset: int, records: list[tuple[bytes | None, bytes | None]], *, codec: int = 0,
             pid: int = -1, epoch: int = -1, seq: int = -1, headers=None) -> bytes:
    b = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=1 << 20, offset=0,
                             producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for i, (k, v) in enumerate(records):
        b.append(T0 + i, k, v, headers or [])
    b.close()
    buf = bytearray(b.buffer())
    # What the broker does on append: patch baseOffset in place (not covered by the CRC).
    struct.pack_into(">q", buf, 0, base_offset)
    return bytes(buf)


def run_dump(paths: list[Path], **kw) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = dl.run(paths, DumpOptions(**kw), out, err)
    return rc, out.getvalue(), err.getvalue()


def write_index(path: Path, base: int, entries: list[tuple[int, int]], prealloc: int = 0) -> None:
    data = b"".join(struct.pack(">ii", off - base, pos) for off, pos in entries)
    path.write_bytes(data + b"\x00" * prealloc)


def write_time_index(path: Path, base: int, entries: list[tuple[int, int]], prealloc: int = 0) -> None:
    data = b"".join(struct.pack(">qi", ts, off - base) for ts, off in entries)
    path.write_bytes(data + b"\x00" * prealloc)


@pytest.fixture
def segment(tmp_path: Path) -> tuple[Path, bytes, bytes]:
    b1 = kp_batch(0, [(b"k0", b"v0"), (b"k1", b"v1"), (None, b"v2")], pid=7, epoch=3, seq=10,
                  headers=[("h1", b"x"), ("h2", None)])
    b2 = kp_batch(3, [(b"k3", b"hello" * 50), (b"k4", None)], codec=1)
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b1 + b2)
    return log, b1, b2


def test_log_batches_match_kafka_fields(segment) -> None:
    log, b1, b2 = segment
    rc, out, err = run_dump([log])
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"Dumping {log}"
    assert lines[1] == "Log starting offset: 0"
    kb1 = DefaultRecordBatch(bytearray(b1))
    assert lines[2] == (
        "baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 10 lastSequence: 12 producerId: 7"
        " producerEpoch: 3"
        " partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty"
        f" position: 0 CreateTime: {T0 + 2} size: {len(b1)} magic: 2 compresscodec: none crc: {kb1.crc}"
        " isvalid: true")
    assert lines[3].startswith("baseOffset: 3 lastOffset: 4 count: 2 baseSequence: -1 lastSequence: -1 "
                               "producerId: -1 producerEpoch: -1")
    expected = f" position: {len(b1)} CreateTime: {T0 + 1} size: {len(b2)} magic: 2 compresscodec: gzip"
    assert expected in lines[3]
    assert lines[3].endswith("isvalid: true")
    assert len(lines) == 4  # no records without --deep-iteration / --print-data-log


def test_print_data_log_records(segment) -> None:
    log, _b1, _b2 = segment
    rc, out, err = run_dump([log], print_data_log=True)
    assert rc == 0
    recs = [line for line in out.splitlines() if line.startswith("|")]
    assert recs[0] == (f"| offset: 0 CreateTime: {T0} keySize: 2 valueSize: 2 sequence: 10"
                       " headerKeys: [h1,h2] key: k0 payload: v0")
    assert recs[1].startswith("| offset: 1 ") and "sequence: 11" in recs[1]
    assert recs[2] == (f"| offset: 2 CreateTime: {T0 + 2} keySize: -1 valueSize: 2 sequence: 12"
                       " headerKeys: [h1,h2] payload: v2")
    assert recs[3].endswith("keySize: 2 valueSize: 250 sequence: -1 headerKeys: [] key: k3 payload: "
                            + "hello" * 50)
    assert recs[4] == (f"| offset: 4 CreateTime: {T0 + 1} keySize: 2 valueSize: -1 sequence: -1"
                       " headerKeys: [] key: k4")
    assert err == ""  # offsets 0..4 consecutive


def test_deep_iteration_and_skip_metadata(segment) -> None:
    log, _b1, _b2 = segment
    _rc, out, _err = run_dump([log], deep_iteration=True)
    recs = [line for line in out.splitlines() if line.startswith("|")]
    assert len(recs) == 5 and all("payload" not in r for r in recs)
    _rc, out, _err = run_dump([log], print_data_log=True, skip_record_metadata=True)
    recs = [line for line in out.splitlines() if line.startswith("|")]
    assert recs[0] == "| key: k0 payload: v0"
    assert recs[2] == "| payload: v2"


def test_trailing_bytes_and_offset_gap_reported(tmp_path: Path) -> None:
    b1 = kp_batch(0, [(b"a", b"1")])
    b2 = kp_batch(5, [(b"b", b"2")])
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(b1 + b2 + b2[:20])
    rc, out, err = run_dump([log], deep_iteration=True)
    assert rc == 0
    assert f"Found 20 invalid bytes at the end of {log.name}" in out
    assert f"Non-consecutive offsets in {log.absolute()}\n  0 is followed by 5\n" in err


def test_corrupted_crc_reported_invalid(segment) -> None:
    log, b1, b2 = segment
    bad = bytearray(b1)
    bad[-1] ^= 0xFF
    log.write_bytes(bytes(bad) + b2)
    _rc, out, _err = run_dump([log])
    batch_lines = [line for line in out.splitlines() if line.startswith("baseOffset")]
    assert batch_lines[0].endswith("isvalid: false") and batch_lines[1].endswith("isvalid: true")


def test_offset_index_dump_and_verify(segment) -> None:
    log, b1, _b2 = segment
    idx = log.with_suffix(".index")
    write_index(idx, 0, [(2, 0), (4, len(b1))], prealloc=80)
    rc, out, err = run_dump([idx])
    assert rc == 0 and err == ""
    assert out.splitlines()[1:] == ["offset: 2 position: 0", f"offset: 4 position: {len(b1)}"]
    write_index(idx, 0, [(2, 0), (3, len(b1))])  # wrong: that batch's last offset is 4
    rc, out, err = run_dump([idx], verify_index_only=True)
    assert out.splitlines()[1:] == []
    assert err == f"Mismatches in :{idx.absolute()}\n  Index offset: 3, log offset: 4\n"


def test_index_sanity_check(tmp_path: Path, segment) -> None:
    log, _b1, _b2 = segment
    idx = log.with_suffix(".index")
    write_index(idx, 0, [(2, 0)])
    rc, out, _err = run_dump([idx], index_sanity_check=True)
    assert rc == 0 and f"{idx} passed sanity check." in out
    idx.write_bytes(idx.read_bytes() + b"\x01\x02\x03")
    rc, _out, err = run_dump([idx], index_sanity_check=True)
    assert rc == 1 and "neither positive nor a multiple of 8" in err
    empty = tmp_path / "00000000000000000099.index"
    empty.write_bytes(b"")
    _rc, out, _err = run_dump([empty])
    assert f"{empty} is empty." in out


def test_time_index_dump_and_verify(segment) -> None:
    log, _b1, _b2 = segment
    tidx = log.with_suffix(".timeindex")
    write_time_index(tidx, 0, [(T0 + 2, 2), (T0 + 1, 4)], prealloc=36)
    rc, out, err = run_dump([tidx])
    assert rc == 0
    assert out.splitlines()[1:] == [f"timestamp: {T0 + 2} offset: 2", f"timestamp: {T0 + 1} offset: 4"]
    # Kafka flags a timestamp not larger than the previous one.
    assert f"Found out of order timestamp in :{tidx.absolute()}" in err
    assert f"  Index timestamp: {T0 + 1}, Previously indexed timestamp: {T0 + 2}" in err
    write_time_index(tidx, 0, [(T0 + 9, 2), (T0 + 10, 3)])
    _rc, _out, err = run_dump([tidx], verify_index_only=True)
    assert f"  Index timestamp: {T0 + 9}, log timestamp: {T0 + 2}" in err
    assert "Indexed offset: 3, found log offset: 4" in err


def test_checkpoint_files(tmp_path: Path) -> None:
    part = tmp_path / "orders-0"
    part.mkdir()
    (part / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n3 120\n")
    topic_id = uuid.UUID("f1e2d3c4-b5a6-4978-8899-aabbccddeeff")
    import base64

    tid = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
    (part / "partition.metadata").write_text(f"version: 0\ntopic_id: {tid}\n")
    (tmp_path / "replication-offset-checkpoint").write_text("0\n2\norders 0 100\norders 1 7\n")
    (tmp_path / "cleaner-offset-checkpoint").write_text("0\n1\norders 0 40\n")
    (tmp_path / "meta.properties").write_text("#comment\nversion=0\nbroker.id=1\ncluster.id=abc\n")
    rc, out, err = run_dump([tmp_path])
    assert rc == 0, err
    assert "epoch: 0 startOffset: 0\nepoch: 3 startOffset: 120\n" in out
    assert "topic: orders partition: 0 offset: 100\ntopic: orders partition: 1 offset: 7\n" in out
    assert "topic: orders partition: 0 offset: 40\n" in out
    assert f"version: 0 topic_id: {tid} (uuid: {topic_id})" in out
    assert "broker.id=1\ncluster.id=abc\nversion=0\n" in out
    (part / "leader-epoch-checkpoint").write_text("0\n3\n0 0\n")
    rc, _out, err = run_dump([part / "leader-epoch-checkpoint"])
    assert rc == 1 and "expected 3 entries, found 1" in err


def test_control_batch_shown_as_end_txn_marker(tmp_path: Path) -> None:
    marker = Record(5, T0, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 17))
    batch = encode_batch([marker], base_offset=5, is_transactional=True, is_control=True, producer_id=3,
                            producer_epoch=0)
    log = tmp_path / "00000000000000000005.log"
    log.write_bytes(batch)
    _rc, out, _err = run_dump([log], print_data_log=True)
    assert "isTransactional: true isControl: true" in out
    assert (f"| offset: 5 CreateTime: {T0} keySize: 4 valueSize: 6 sequence: -1 headerKeys: []"
            " endTxnMarker: COMMIT coordinatorEpoch: 17\n") in out


def test_producer_snapshot_and_txn_index(tmp_path: Path) -> None:
    entry = dl.ProducerSnapshotEntry.build(dict(producer_id=42, producer_epoch=2, last_sequence=9,
                                                last_offset=99, offset_delta=4, timestamp=T0,
                                                coordinator_epoch=-1, current_txn_first_offset=-1))
    body = struct.pack(">i", 1) + entry
    snap = tmp_path / "00000000000000000100.snapshot"
    snap.write_bytes(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)
    txn = tmp_path / "00000000000000000000.txnindex"
    txn.write_bytes(dl.AbortedTxnEntry.build(dict(version=0, producer_id=42, first_offset=10, last_offset=20,
                                                  last_stable_offset=10)))
    rc, out, err = run_dump([snap, txn])
    assert rc == 0, err
    assert ("producerId: 42 producerEpoch: 2 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
            f"lastTimestamp: {T0} firstSequence: 5 lastSequence: 9 lastOffset: 99 offsetDelta: 4 timestamp: {T0}"
            ) in out
    assert "version: 0 producerId: 42 firstOffset: 10 lastOffset: 20 lastStableOffset: 10" in out
    raw = bytearray(snap.read_bytes())
    raw[-1] ^= 1
    snap.write_bytes(bytes(raw))
    rc, _out, err = run_dump([snap])
    assert rc == 1 and "CRC is no longer valid" in err


def test_legacy_magic1_shallow(tmp_path: Path) -> None:
    b = MemoryRecordsBuilder(magic=1, compression_type=0, batch_size=1 << 20, offset=0)
    b.append(T0, b"k", b"v")
    b.close()
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(bytes(b.buffer()))
    rc, out, _err = run_dump([log], print_data_log=True)
    assert rc == 0
    size = len(b.buffer())
    assert f"offset: 0 position: 0 CreateTime: {T0} size: {size} magic: 1 compresscodec: none" in out
    assert out.rstrip().endswith("isvalid: true")


def test_cli_subprocess(segment) -> None:
    log, _b1, _b2 = segment
    proc = subprocess.run([sys.executable, "-m", "storage.dump_log", "--files", str(log), "--print-data-log"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "| offset: 3 " in proc.stdout and "key: k3 payload: hello" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "storage.dump_log"], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and "Missing required argument" in proc.stderr


def test_dump_a_partition_dir_written_by_storage_log(tmp_path: Path) -> None:
    import time

    from storage.config import LogConfig
    from storage.log import Log

    topic_id = uuid.uuid4()
    log = Log.open(tmp_path / "orders-0", LogConfig(), topic_id=topic_id)
    now = int(time.time() * 1000)
    for seq in (0, 2):
        log.append_as_leader(bytearray(kp_batch(0, [(b"k", b"v"), (b"k2", b"v2")], pid=5, epoch=0, seq=seq)), 3,
                             now_ms=now)
        log.roll()
    log.close()
    rc, out, err = run_dump([tmp_path / "orders-0"], print_data_log=True)
    assert rc == 0 and err == ""  # a segment starting at offset 2 is not a gap
    assert "baseOffset: 2 lastOffset: 3 count: 2 baseSequence: 2 lastSequence: 3 producerId: 5" in out
    assert "partitionLeaderEpoch: 3" in out
    assert "epoch: 3 startOffset: 0\n" in out  # leader-epoch-checkpoint
    assert f"(uuid: {topic_id})" in out  # partition.metadata
    # The producer-state snapshot written at the roll to offset 4 parses as Kafka's format (CRC checked).
    assert "producerId: 5 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty" in out
    assert "firstSequence: 2 lastSequence: 3 lastOffset: 3 offsetDelta: 1" in out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300), st.sampled_from([".log", ".index", ".timeindex", ".snapshot", ".txnindex"]))
def test_fuzz_any_file_bytes_dump_without_crashing(tmp_path: Path, data: bytes, suffix: str) -> None:
    valid = encode_batch([Record(0, T0, b"k", b"v")], base_offset=0)
    (tmp_path / "00000000000000000000.log").write_bytes(valid if suffix != ".log" else data)
    target = tmp_path / f"00000000000000000000{suffix}"
    target.write_bytes(data)
    for opts in ({"print_data_log": True}, {"verify_index_only": True}, {"index_sanity_check": True}):
        rc, _out, _err = run_dump([target], **opts)
        assert rc in (0, 1)


def test_a_transactional_log_dumps_markers_txnindex_and_open_transactions(tmp_path: Path) -> None:
    """What Kafka's DumpLogSegments prints for a log our broker wrote with transactions: end markers in
    deep iteration, the .txnindex entries, and the snapshot's open transaction as an OptionalLong."""
    from storage import AppendOrigin, Log, LogConfig

    from .txn_support import marker, txn_batch

    log = Log.open(tmp_path / "orders-0", LogConfig())
    log.append_as_leader(txn_batch(1, 0, 2), 0, now_ms=1)  # 0-1
    log.append_as_leader(marker(1, commit=False, coordinator_epoch=2), 0, now_ms=1,
                         origin=AppendOrigin.COORDINATOR)  # 2
    log.append_as_leader(txn_batch(1, 2), 0, now_ms=1)  # 3: open
    log.close()
    rc, out, err = run_dump([tmp_path / "orders-0"], deep_iteration=True)
    assert rc == 0, err
    assert "baseOffset: 2 lastOffset: 2 count: 1 baseSequence: -1 lastSequence: -1 producerId: 1 producerEpoch: 0" \
        in out
    assert "isTransactional: true isControl: true" in out
    assert "| offset: 2 CreateTime: " in out and " endTxnMarker: ABORT coordinatorEpoch: 2\n" in out
    assert "Dumping " + str(tmp_path / "orders-0" / "00000000000000000000.txnindex") in out
    assert "version: 0 producerId: 1 firstOffset: 0 lastOffset: 2 lastStableOffset: 3\n" in out
    assert ("producerId: 1 producerEpoch: 0 coordinatorEpoch: 2 currentTxnFirstOffset: OptionalLong[3] "
            "lastTimestamp: ") in out
