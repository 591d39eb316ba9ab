"""Fetch sessions (KIP-227) through a real broker and kafka-python's FetchRequest v12 on a raw socket."""

from __future__ import annotations

import socket

from kafka import KafkaProducer

from protocol import ApiKey, request_class

from .wire import roundtrip


def _fetch(Req, session_id, epoch, partitions, forgotten=()):
    T = Req.FetchTopic
    return Req[12](replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                   session_id=session_id, session_epoch=epoch,
                   topics=[T(topic="fs", partitions=[T.FetchPartition(partition=p, current_leader_epoch=-1,
                                                                        fetch_offset=o, last_fetched_epoch=-1,
                                                                        log_start_offset=-1,
                                                                        partition_max_bytes=1 << 20)
                                                     for p, o in partitions])] if partitions else [],
                   forgotten_topics_data=[Req.ForgottenTopic(topic="fs", partitions=list(forgotten))]
                   if forgotten else [], rack_id="")


def test_incremental_fetch_answers_only_changes(broker_factory) -> None:
    b = broker_factory({"num.partitions": "2"})
    p = KafkaProducer(bootstrap_servers=b.bootstrap)
    p.send("fs", b"a", partition=0).get(10)
    p.send("fs", b"b", partition=1).get(10)
    Req = request_class(ApiKey.FETCH)
    with socket.create_connection(("127.0.0.1", b.port), timeout=10) as s:
        full = roundtrip(s, _fetch(Req, 0, 0, [(0, 0), (1, 0)]), 1)
        assert full.error_code == 0 and full.session_id > 0
        assert sorted(pd.partition_index for t in full.responses for pd in t.partitions) == [0, 1]
        sid = full.session_id
        # The client moved its fetch offsets past what it got and nothing else changed: no partitions.
        inc = roundtrip(s, _fetch(Req, sid, 1, [(0, 1), (1, 1)]), 2)
        assert inc.error_code == 0 and inc.session_id == sid
        assert [pd for t in inc.responses for pd in t.partitions] == []
        # New data on partition 1 only.
        p.send("fs", b"c", partition=1).get(10)
        inc = roundtrip(s, _fetch(Req, sid, 2, []), 3)
        parts = [pd for t in inc.responses for pd in t.partitions]
        assert [pd.partition_index for pd in parts] == [1] and parts[0].high_watermark == 2
        # A wrong epoch is refused.
        bad = roundtrip(s, _fetch(Req, sid, 9, []), 4)
        assert bad.error_code == 71  # INVALID_FETCH_SESSION_EPOCH
        unknown = roundtrip(s, _fetch(Req, 12345, 1, []), 5)
        assert unknown.error_code == 70  # FETCH_SESSION_ID_NOT_FOUND
    p.close()
