"""KRaft snapshot files in Kafka's `.checkpoint` layout: names, batches, header first and footer last."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from protocol.metadata_records import (
    FeatureLevelRecord,
    KRaftVersionRecord,
    PartitionRecord,
    SnapshotFooterRecord,
    SnapshotHeaderRecord,
    TopicRecord,
    decode_control_record,
    decode_metadata_record,
    encode_control_record,
    encode_metadata_record,
)
from records import Compression, build_batch, iter_batches
from storage.snapshot_file import (
    BOOTSTRAP_FILE,
    BOOTSTRAP_SNAPSHOT_ID,
    CorruptSnapshotError,
    SnapshotId,
    SnapshotWriter,
    delete_snapshot,
    latest_snapshot_id,
    list_snapshots,
    parse_snapshot_path,
    read_snapshot,
    snapshot_filename,
    snapshot_path,
)

HEADER = encode_control_record(SnapshotHeaderRecord(record_version=0, last_contained_log_timestamp=1_700_000_000_000))
FOOTER = encode_control_record(SnapshotFooterRecord(record_version=0))
TOPIC_ID = uuid.UUID(int=42)


def _records(n: int) -> list[bytes]:
    out = [encode_metadata_record(FeatureLevelRecord(name='metadata.version', feature_level=19)),
           encode_metadata_record(TopicRecord(name='foo', topic_id=TOPIC_ID))]
    for p in range(n):
        out.append(encode_metadata_record(PartitionRecord(
            partition_id=p, topic_id=TOPIC_ID, replicas=[1, 2, 3], isr=[1, 2, 3], removing_replicas=[],
            adding_replicas=[], leader=1, leader_epoch=0, partition_epoch=0, directories=[]), 1))
    return out


def test_file_names_follow_kafka() -> None:
    sid = SnapshotId(1234, 5)
    assert snapshot_filename(sid) == '00000000000000001234-0000000005'
    assert snapshot_path(Path('/x'), sid) == Path('/x/00000000000000001234-0000000005.checkpoint')
    parsed = parse_snapshot_path(Path('/x/00000000000000001234-0000000005.checkpoint'))
    assert parsed is not None and parsed.snapshot_id == sid and not parsed.partial and not parsed.deleted
    partial = parse_snapshot_path(Path('00000000000000001234-0000000005-abc.checkpoint.part'))
    assert partial is not None and partial.partial
    deleted = parse_snapshot_path(Path('00000000000000001234-0000000005.checkpoint.deleted'))
    assert deleted is not None and deleted.deleted
    for other in ('00000000000000001234.log', 'leader-epoch-checkpoint', 'quorum-state', BOOTSTRAP_FILE,
                  'x0000000000000001234-0000000005.checkpoint'):
        assert parse_snapshot_path(Path(other)) is None


def test_write_then_read_round_trip(tmp_path: Path) -> None:
    values = _records(50)
    sid = SnapshotId(1000, 3)
    with SnapshotWriter(tmp_path, sid, HEADER, timestamp_ms=1_700_000_000_123, max_batch_bytes=400) as writer:
        writer.append(values[:10])
        writer.append(values[10:])
        path = writer.freeze(FOOTER)
    assert path == tmp_path / '00000000000000001000-0000000003.checkpoint'
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # the .part file was renamed
    snapshot = read_snapshot(path)
    assert snapshot.snapshot_id == sid
    assert snapshot.values() == values
    assert snapshot.header == HEADER and snapshot.footer == FOOTER
    assert len(snapshot.batches) > 3  # the data was split at max_batch_bytes
    header_type, header = decode_control_record(*snapshot.header)
    assert header.last_contained_log_timestamp == 1_700_000_000_000
    assert [decode_metadata_record(v).message.name for v in snapshot.values()[:2]] == ['metadata.version', 'foo']


def test_batch_layout_is_kafkas(tmp_path: Path) -> None:
    sid = SnapshotId(7, 2)
    kraft_version = encode_control_record(KRaftVersionRecord(record_version=0, k_raft_version=1))
    writer = SnapshotWriter(tmp_path, sid, HEADER, header_extras=[kraft_version], timestamp_ms=99)
    writer.append(_records(2))
    path = writer.freeze(FOOTER)
    batches = list(iter_batches(path.read_bytes()))
    assert [b.base_offset for b in batches] == [0, 2, 6]  # offsets from 0, one per record
    assert [b.is_control for b in batches] == [True, False, True]
    for b in batches:
        assert b.partition_leader_epoch == 2  # the snapshot epoch
        assert b.producer_id == -1 and b.producer_epoch == -1 and b.base_sequence == -1
        assert not b.is_transactional and b.magic == 2
        assert b.first_timestamp == b.max_timestamp == 99
        b.ensure_valid()
    first = list(batches[0].records())
    assert [(r.key, r.value) for r in first] == [HEADER, kraft_version]
    assert first[0].key == struct.pack('>hh', 0, 3)
    last = list(batches[2].records())
    assert [(r.key, r.value) for r in last] == [FOOTER]
    assert all(r.key is None and not r.headers for r in batches[1].records())


def test_compressed_data_batches_are_read(tmp_path: Path) -> None:
    values = _records(20)
    writer = SnapshotWriter(tmp_path, SnapshotId(22, 1), HEADER, timestamp_ms=5, compression=Compression.ZSTD)
    writer.append(values)
    snapshot = read_snapshot(writer.freeze(FOOTER))
    assert snapshot.values() == values
    assert [b.is_control for b in snapshot.batches] == [True, False, True]


def test_bootstrap_checkpoint(tmp_path: Path) -> None:
    writer = SnapshotWriter(tmp_path, BOOTSTRAP_SNAPSHOT_ID, HEADER, timestamp_ms=1,
                            final_path=tmp_path / BOOTSTRAP_FILE)
    writer.append(_records(0)[:1])
    path = writer.freeze(FOOTER)
    assert path.name == 'bootstrap.checkpoint'
    snapshot = read_snapshot(path)
    assert snapshot.snapshot_id is None
    assert decode_metadata_record(snapshot.values()[0]).message.feature_level == 19


def test_empty_snapshot_has_header_and_footer_only(tmp_path: Path) -> None:
    path = SnapshotWriter(tmp_path, SnapshotId(0, 0), HEADER, timestamp_ms=1).freeze(FOOTER)
    snapshot = read_snapshot(path)
    assert snapshot.values() == [] and snapshot.control_records == [HEADER, FOOTER]


def test_listing_and_deleting(tmp_path: Path) -> None:
    for sid in (SnapshotId(10, 1), SnapshotId(30, 2), SnapshotId(20, 1)):
        SnapshotWriter(tmp_path, sid, HEADER, timestamp_ms=1).freeze(FOOTER)
    abandoned = SnapshotWriter(tmp_path, SnapshotId(40, 2), HEADER, timestamp_ms=1)
    assert [p.snapshot_id for p in list_snapshots(tmp_path)] == [(10, 1), (20, 1), (30, 2), (40, 2)]
    assert list_snapshots(tmp_path)[-1].partial
    assert latest_snapshot_id(tmp_path) == SnapshotId(30, 2)
    abandoned.close()
    assert not abandoned.tmp_path.exists()
    assert delete_snapshot(tmp_path, SnapshotId(30, 2))
    assert not delete_snapshot(tmp_path, SnapshotId(30, 2))
    assert latest_snapshot_id(tmp_path) == SnapshotId(20, 1)


def test_writer_refuses_misplaced_control_records(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match='SNAPSHOT_HEADER'):
        SnapshotWriter(tmp_path, SnapshotId(1, 1), FOOTER, timestamp_ms=1)
    writer = SnapshotWriter(tmp_path, SnapshotId(1, 1), HEADER, timestamp_ms=1)
    with pytest.raises(ValueError, match='SNAPSHOT_FOOTER'):
        writer.freeze(HEADER)
    with pytest.raises(ValueError, match='non-empty'):
        writer.append([b''])
    writer.freeze(FOOTER)
    with pytest.raises(ValueError, match='frozen'):
        writer.append([b'x'])


def _write_raw(tmp_path: Path, *batches: bytes) -> Path:
    path = tmp_path / '00000000000000000010-0000000001.checkpoint'
    path.write_bytes(b''.join(batches))
    return path


def _control(pairs: list[tuple[bytes, bytes]], base: int, ts: int = 1) -> bytes:
    return build_batch([(k, v, (), ts) for k, v in pairs], base_offset=base, is_control=True,
                       partition_leader_epoch=1)


def _data(values: list[bytes], base: int, key: bytes | None = None, timestamps: list[int] | None = None,
          headers: tuple[tuple[str, bytes], ...] = ()) -> bytes:
    ts = timestamps or [1] * len(values)
    return build_batch([(key, v, headers, t) for v, t in zip(values, ts, strict=True)], base_offset=base,
                       partition_leader_epoch=1)


@pytest.mark.parametrize(('build', 'message'), [
    (lambda v: [_data(v, 0), _control([FOOTER], 2)], 'first batch is not a control batch'),
    (lambda v: [_control([FOOTER], 0), _data(v, 1), _control([FOOTER], 3)], 'not a snapshot header'),
    (lambda v: [_control([HEADER], 0), _data(v, 1)], 'snapshot footer'),
    (lambda v: [_control([HEADER], 0), _data(v, 1)[:-3]], 'past the end'),
    (lambda v: [_control([HEADER], 0), _data(v, 1, key=b'k'), _control([FOOTER], 3)], 'has a key'),
    (lambda v: [_control([HEADER], 0), _data(v, 1, timestamps=[1, 2]), _control([FOOTER], 3)], 'timestamp delta'),
    (lambda v: [_control([HEADER], 0), _data(v, 1, headers=(('h', b'x'),)), _control([FOOTER], 3)], 'headers'),
    (lambda v: [_control([HEADER], 0), _data(v, 5), _control([FOOTER], 7)], 'where 1 was expected'),
    (lambda v: [_control([HEADER], 0), _control([(b'\x00', b'\x00')], 1), _control([FOOTER], 2)], 'no valid key'),
], ids=['no-header-batch', 'footer-first', 'no-footer', 'truncated', 'keyed-data', 'timestamp-delta',
        'record-headers', 'offset-gap', 'short-control-key'])
def test_corrupt_snapshots_are_refused(
    tmp_path: Path, build: Callable[[list[bytes]], list[bytes]], message: str
) -> None:
    path = _write_raw(tmp_path, *build(_records(0)))
    with pytest.raises(CorruptSnapshotError, match=message):
        read_snapshot(path)


def test_crc_mismatch_is_refused(tmp_path: Path) -> None:
    data = bytearray(_control([HEADER], 0) + _data(_records(0), 1) + _control([FOOTER], 3))
    data[-2] ^= 0xFF
    path = _write_raw(tmp_path, bytes(data))
    with pytest.raises(CorruptSnapshotError, match='CRC'):
        read_snapshot(path)


def test_damaged_files_raise_only_corrupt_snapshot_error(tmp_path: Path) -> None:
    import random

    writer = SnapshotWriter(tmp_path, SnapshotId(10, 1), HEADER, timestamp_ms=1, compression=Compression.LZ4)
    writer.append(_records(5))
    good = writer.freeze(FOOTER).read_bytes()
    rng = random.Random(7)
    path = tmp_path / 'damaged.checkpoint'
    for i in range(400):
        data = bytearray(good)
        if i % 2:
            data = data[:rng.randrange(len(data))]
        else:
            for _ in range(rng.randrange(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        path.write_bytes(bytes(data))
        try:
            read_snapshot(path)
        except CorruptSnapshotError:
            pass
