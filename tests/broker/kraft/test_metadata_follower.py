"""The metadata log follower against the test controller over a real socket: leader discovery, committed
records only, divergence truncation, retargeting."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

from broker.kraft.loader import MetadataLoader
from broker.kraft.raft_client import MetadataLogFollower
from protocol import ApiKey
from protocol.metadata_records import TopicRecord
from tests.kraft_controller import KRaftController


def run(coro: object) -> None:
    asyncio.run(asyncio.wait_for(coro, 30))  # type: ignore[arg-type]


async def until(check: object, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


def follower(controller: KRaftController, node_id: int = 7, voters: dict | None = None) -> MetadataLogFollower:
    return MetadataLogFollower(node_id, controller.cluster_id, MetadataLoader(),
                               voters=voters or {controller.node_id: (controller.host, controller.port)})


def test_follows_the_leader_and_applies_only_committed_records() -> None:
    async def main() -> None:
        controller = KRaftController(epoch=5)
        await controller.start()
        f = follower(controller)
        f.start()
        try:
            await until(lambda: f.loader.image.features.metadata_version == 19)
            # The first fetch (epoch -1) was fenced and named the leader; we took it.
            assert (f.leader_id, f.leader_epoch) == (3000, 5)
            fetches = [r for k, r in controller.requests if k == ApiKey.FETCH]
            assert fetches[0].replica_state.replica_id == 7 and fetches[0].cluster_id == controller.cluster_id
            assert fetches[0].topics[0].topic_id == uuid.UUID(int=1)
            controller.auto_commit = False
            controller.append([TopicRecord(name="uncommitted", topic_id=uuid.uuid4(), version=0)])
            await until(lambda: f.end_offset == controller.end_offset)
            assert f.loader.image.topics.get_topic("uncommitted") is None
            controller.commit()
            await until(lambda: f.loader.image.topics.get_topic("uncommitted") is not None)
            assert f.applied_offset == controller.end_offset - 1
        finally:
            await f.stop()
            await controller.stop()
    run(main())


def test_diverging_epoch_truncates_uncommitted_records() -> None:
    async def main() -> None:
        controller = KRaftController()
        await controller.start()
        f = follower(controller)
        f.start()
        try:
            await until(lambda: f.applied_offset == controller.end_offset - 1)
            controller.auto_commit = False
            keep = controller.end_offset
            controller.append([TopicRecord(name="lost", topic_id=uuid.uuid4(), version=0)])
            await until(lambda: f.end_offset == controller.end_offset)
            controller.diverge(keep)  # a new leader without that batch: epoch 2 starts at `keep`
            controller.append([TopicRecord(name="kept", topic_id=uuid.uuid4(), version=0)])
            controller.commit()
            await until(lambda: f.loader.image.topics.get_topic("kept") is not None)
            assert f.loader.image.topics.get_topic("lost") is None
            assert f.leader_epoch == 2 and f.end_offset == controller.end_offset
            fetches = [r for k, r in controller.requests if k == ApiKey.FETCH]
            assert any(r.topics[0].partitions[0].fetch_offset == keep + 1 and
                       r.topics[0].partitions[0].last_fetched_epoch == 1 for r in fetches)
        finally:
            await f.stop()
            await controller.stop()
    run(main())


def test_retargets_to_the_leader_a_voter_names() -> None:
    async def main() -> None:
        old, new = KRaftController(node_id=1, epoch=3), KRaftController(node_id=2, epoch=4)
        await old.start()
        await new.start()
        new.append([TopicRecord(name="on-new-leader", topic_id=uuid.uuid4(), version=0)])
        old.resign(2, 4)  # voter 1 now answers NOT_LEADER_OR_FOLLOWER naming voter 2 at epoch 4
        f = follower(old, voters={1: (old.host, old.port), 2: (new.host, new.port)})
        f.leader_id = 1
        f.start()
        try:
            await until(lambda: f.loader.image.topics.get_topic("on-new-leader") is not None)
            assert (f.leader_id, f.leader_epoch) == (2, 4)
        finally:
            await f.stop()
            await old.stop()
            await new.stop()
    run(main())


def test_bootstrap_servers_only_the_leader_endpoint_comes_from_node_endpoints() -> None:
    async def main() -> None:
        old, new = KRaftController(node_id=1, epoch=3), KRaftController(node_id=2, epoch=4)
        await old.start()
        await new.start()
        new.append([TopicRecord(name="found", topic_id=uuid.uuid4(), version=0)])
        old.resign(2, 4, (new.host, new.port))
        f = MetadataLogFollower(7, old.cluster_id, MetadataLoader(), voters={}, bootstrap=[(old.host, old.port)])
        f.start()
        try:
            await until(lambda: f.loader.image.topics.get_topic("found") is not None)
            assert f.leader_endpoint() == (new.host, new.port)
        finally:
            await f.stop()
            await old.stop()
            await new.stop()
    run(main())


def test_a_snapshot_is_fetched_when_the_leader_log_starts_after_ours(tmp_path: Path) -> None:
    async def main() -> None:
        controller = KRaftController()
        await controller.start()
        for i in range(30):
            controller.append([TopicRecord(name=f"t{i}", topic_id=uuid.uuid4(), version=0)])
        end = controller.take_snapshot()
        controller.append([TopicRecord(name="after", topic_id=uuid.uuid4(), version=0)])
        f = MetadataLogFollower(7, controller.cluster_id, MetadataLoader(),
                                voters={controller.node_id: (controller.host, controller.port)},
                                snapshot_dir=tmp_path / "__cluster_metadata-0")
        f.start()
        try:
            await until(lambda: f.loader.image.topics.get_topic("after") is not None)
            assert all(f.loader.image.topics.get_topic(f"t{i}") is not None for i in range(30))
            assert f.loader.image.features.metadata_version == 19
            snapshots = [(k, r) for k, r in controller.requests if k == ApiKey.FETCH_SNAPSHOT]
            assert len(snapshots) > 1  # fetched in several chunks, by position
            assert [r.topics[0].partitions[0].position for _, r in snapshots][0] == 0
            assert (tmp_path / "__cluster_metadata-0" / f"{end:020d}-{1:010d}.checkpoint").exists()
            assert f.applied_offset == controller.end_offset - 1
        finally:
            await f.stop()
            await controller.stop()
    run(main())


def test_the_metadata_log_on_disk_survives_a_restart(tmp_path: Path) -> None:
    from broker.kraft.metadata_log import MetadataLogStore

    async def main() -> None:
        controller = KRaftController(epoch=4)
        await controller.start()
        for i in range(5):
            controller.append([TopicRecord(name=f"t{i}", topic_id=uuid.uuid4(), version=0)])
        voters = {controller.node_id: (controller.host, controller.port)}
        directory = tmp_path / "__cluster_metadata-0"
        f = MetadataLogFollower(7, controller.cluster_id, MetadataLoader(), voters=voters,
                                store=MetadataLogStore(directory))
        f.start()
        try:
            await until(lambda: f.applied_offset == controller.end_offset - 1)
        finally:
            await f.stop()
        assert (directory / f"{0:020d}.log").stat().st_size > 0
        assert json.loads((directory / "quorum-state").read_text()) == {
            "clusterId": "", "leaderId": 3000, "leaderEpoch": 4, "votedId": -1, "appliedOffset": 0,
            "currentVoters": [{"voterId": 3000}], "data_version": 0}
        end = controller.end_offset
        controller.append([TopicRecord(name="later", topic_id=uuid.uuid4(), version=0)])
        again = MetadataLogFollower(7, controller.cluster_id, MetadataLoader(), voters=voters,
                                    store=MetadataLogStore(directory))
        again.start()  # what is on disk is held until the first answer's high watermark commits it
        assert again.end_offset == end and again.loader.image.topics.get_topic("t0") is None
        try:
            await until(lambda: again.loader.image.topics.get_topic("later") is not None)
            assert all(again.loader.image.topics.get_topic(f"t{i}") is not None for i in range(5))
            fetches = [r for k, r in controller.requests if k == ApiKey.FETCH]
            assert any(r.topics[0].partitions[0].fetch_offset == end for r in fetches)
            assert not any(r.topics[0].partitions[0].fetch_offset == 0 for r in fetches[-3:])
        finally:
            await again.stop()
            await controller.stop()
    run(main())


def test_a_fetched_snapshot_on_disk_is_loaded_at_restart(tmp_path: Path) -> None:
    from broker.kraft.metadata_log import MetadataLogStore

    async def main() -> None:
        controller = KRaftController()
        await controller.start()
        controller.append([TopicRecord(name="in-snapshot", topic_id=uuid.uuid4(), version=0)])
        end = controller.take_snapshot()
        controller.append([TopicRecord(name="after", topic_id=uuid.uuid4(), version=0)])
        voters = {controller.node_id: (controller.host, controller.port)}
        directory = tmp_path / "__cluster_metadata-0"
        f = MetadataLogFollower(7, controller.cluster_id, MetadataLoader(), voters=voters,
                                store=MetadataLogStore(directory))
        f.start()
        try:
            await until(lambda: f.loader.image.topics.get_topic("after") is not None)
        finally:
            await f.stop()
        await controller.stop()
        again = MetadataLogFollower(7, controller.cluster_id, MetadataLoader(), voters=voters,
                                    store=MetadataLogStore(directory))
        again.start()  # the controller is gone: the snapshot alone is loaded, the batch after it held
        try:
            assert again.loader.image.topics.get_topic("in-snapshot") is not None
            assert again.loader.image.offset == end - 1 and again.end_offset == end + 1
            assert again.loader.image.topics.get_topic("after") is None
        finally:
            await again.stop()
    run(main())


def test_the_broker_writes_its_own_snapshot_and_a_restart_loads_it(tmp_path: Path) -> None:
    from broker.kraft.metadata_log import MetadataLogStore

    async def main() -> None:
        controller = KRaftController()
        await controller.start()
        voters = {controller.node_id: (controller.host, controller.port)}
        directory = tmp_path / "__cluster_metadata-0"
        f = MetadataLogFollower(7, controller.cluster_id, MetadataLoader(), voters=voters,
                                store=MetadataLogStore(directory), snapshot_max_bytes=500)
        f.start()
        try:
            for i in range(20):
                controller.append([TopicRecord(name=f"t{i}", topic_id=uuid.uuid4(), version=0)])
            await until(lambda: f.applied_offset == controller.end_offset - 1)
        finally:
            await f.stop()
        snapshots = sorted(p.name for p in directory.iterdir() if p.name.endswith(".checkpoint"))
        assert len(snapshots) == 1  # one every ~500 bytes of records, each replacing the one before
        await controller.stop()  # nothing to fetch: the restart has only its disk
        again = MetadataLogFollower(7, controller.cluster_id, MetadataLoader(), voters=voters,
                                    store=MetadataLogStore(directory))
        again.start()
        try:
            end = int(snapshots[-1].split("-")[0])
            assert again.loader.image.offset == end - 1  # loaded from its snapshot before any fetch
            # t<i> was appended at offset 2 + i (after the LeaderChange and metadata.version records).
            present = {i for i in range(20) if again.loader.image.topics.get_topic(f"t{i}") is not None}
            assert present == {i for i in range(20) if 2 + i < end}
        finally:
            await again.stop()
    run(main())


def test_segments_below_our_snapshot_are_deleted(tmp_path: Path) -> None:
    from broker.kraft.metadata_log import MetadataLogStore

    async def main() -> None:
        controller = KRaftController()
        await controller.start()
        directory = tmp_path / "__cluster_metadata-0"
        store = MetadataLogStore(directory, segment_bytes=300)  # a segment every few batches
        f = MetadataLogFollower(7, controller.cluster_id, MetadataLoader(),
                                voters={controller.node_id: (controller.host, controller.port)}, store=store,
                                snapshot_max_bytes=2000)
        f.start()
        try:
            for i in range(40):  # fetched one by one: one append each, a segment rolled every few
                controller.append([TopicRecord(name=f"t{i}", topic_id=uuid.uuid4(), version=0)])
                await until(lambda: f.applied_offset == controller.end_offset - 1)
            assert store.log.log_start_offset > 0
            segments = sorted(int(p.stem) for p in directory.glob("*.log"))
            assert segments[0] <= store.log.log_start_offset  # only whole segments below the start went
            assert segments[0] > 0
        finally:
            await f.stop()
            await controller.stop()
    run(main())
