"""ElectLeaders (kafka-leader-election.sh, the admin clients' elect_leaders) served by our controller in a
3-broker cluster on a real ZooKeeper, through confluent-kafka's and kafka-python's admin clients and raw
frames from our codec: preferred and unclean elections, and each per-partition answer Kafka gives.
"""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import ElectionType, KafkaException, Producer
from confluent_kafka import TopicPartition as TP
from kafka import KafkaAdminClient

from protocol import ApiKey, request_class
from protocol.errors import ErrorCode
from tests.cluster.support import Zk, admin, create_topic, raw_request, start_cluster, wait_isr, wait_until

OVERRIDES = {"zookeeper.session.timeout.ms": "3000", "replica.fetch.wait.max.ms": "100",
             "auto.leader.rebalance.enable": "false", "replica.lag.time.max.ms": "3000"}


def _codes(results: dict) -> dict[tuple[str, int], int]:
    """confluent-kafka's answer (None or a KafkaError per partition) as error codes."""
    return {(tp.topic, tp.partition): (0 if e is None else e.code()) for tp, e in results.items()}


def _confluent_elect(bootstrap: str, election: ElectionType, tps: list[TP]) -> dict[tuple[str, int], int]:
    client = admin(bootstrap)
    future = client.elect_leaders(election, tps)  # (2.16 refuses its own documented timeout kwargs)
    try:
        return _codes(future.result(40))
    except KafkaException as e:  # every partition failed: the future carries the first error only
        raise AssertionError(f"elect_leaders failed as a whole: {e}") from None


def test_elect_leaders(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, OVERRIDES)
    zk = Zk(cluster)
    try:
        wait_until(lambda: zk.controller() is not None and len(zk.live_brokers()) == 3, 15, "a controller")
        c = zk.controller()
        a, b = (x for x in range(3) if x != c)
        create_topic(cluster.bootstrap, "pref", 2, 3, assignment=[[a, b, c], [b, a, c]])
        create_topic(cluster.bootstrap, "uncl", 1, 2, assignment=[[a, b]])
        create_topic(cluster.bootstrap, "solo", 1, 1, assignment=[[a]])
        wait_isr(zk, "pref", 2, {0, 1, 2}, 20)
        wait_isr(zk, "uncl", 1, {a, b}, 20)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(100):
            producer.produce("uncl", value=str(i).encode(), partition=0)
        assert producer.flush(30) == 0

        # b dies: it leaves uncl's ISR (a leads on); pref-1 fails over to a.
        cluster.brokers[b].kill()
        wait_until(lambda: zk.partition_state("pref", 1)["leader"] == a, 20, "pref-1 failing over to a")
        wait_until(lambda: zk.partition_state("uncl", 0)["isr"] == [a], 20, "uncl's ISR without b")
        cluster.restart(b)
        wait_isr(zk, "pref", 2, {0, 1, 2}, 30)
        epoch = zk.partition_state("pref", 1)["leader_epoch"]

        # Preferred, through confluent-kafka: pref-1 moves back to b; pref-0 needs nothing; unknown partitions.
        codes = _confluent_elect(cluster.bootstrap, ElectionType.PREFERRED,
                                 [TP("pref", 0), TP("pref", 1), TP("pref", 7), TP("nosuch", 0)])
        assert codes == {("pref", 0): ErrorCode.ELECTION_NOT_NEEDED, ("pref", 1): 0,
                         ("pref", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         ("nosuch", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        state = zk.partition_state("pref", 1)
        assert (state["leader"], state["leader_epoch"], sorted(state["isr"])) == (b, epoch + 1, [0, 1, 2])

        # b dies again (uncl's ISR is a alone), then a: uncl (ISR [a]) and solo go offline; b comes back live
        # but out of uncl's ISR, with no leader to catch up from.
        cluster.brokers[b].kill()
        wait_until(lambda: zk.partition_state("uncl", 0)["isr"] == [a], 20, "uncl's ISR without b")
        cluster.brokers[a].kill()
        wait_until(lambda: zk.partition_state("uncl", 0)["leader"] == -1, 20, "uncl offline")
        wait_until(lambda: zk.partition_state("solo", 0)["leader"] == -1, 20, "solo offline")
        cluster.restart(b)
        wait_until(lambda: b in zk.live_brokers(), 20, "b back")

        # Through kafka-python: preferred cannot (a is dead), unclean on a live leader is not needed.
        kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
        try:
            resp = kp.elect_leaders(0, {"uncl": [0]}, timeout_ms=10000, raise_errors=False)
            [[p]] = [r.partition_result for r in resp.replica_election_results]
            assert (p.partition_id, p.error_code, p.error_message) == (
                0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                "Failed to elect leader for partition uncl-0 under strategy "
                "PreferredReplicaPartitionLeaderElectionStrategy")
            resp = kp.elect_leaders(1, {"pref": [1]}, timeout_ms=10000, raise_errors=False)
            assert (resp.error_code, resp.replica_election_results[0].partition_result[0].error_code) == \
                (0, ErrorCode.ELECTION_NOT_NEEDED)
        finally:
            kp.close()

        # Unclean, through confluent-kafka: b takes uncl over (its ISR is then b alone); solo has no live
        # replica at all.
        codes = _confluent_elect(cluster.bootstrap, ElectionType.UNCLEAN, [TP("uncl", 0), TP("solo", 0)])
        assert codes == {("uncl", 0): 0, ("solo", 0): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}
        state = zk.partition_state("uncl", 0)
        # A leader from outside the ISR marks the partition RECOVERING (KIP-704, inter.broker.protocol.version 3.2+).
        assert (state["leader"], state["isr"], state["leader_recovery_state"]) == (b, [b], 1)

        # Raw frames: v0 (always preferred: pref-0's preferred replica a is dead) and a broker that is not the
        # controller.
        Req = request_class(ApiKey.ELECT_LEADERS)
        T = Req.TopicPartitions
        resp = raw_request(cluster.brokers[c].port, Req[0](topic_partitions=[T(topic="pref", partitions=[0])],
                                                           timeout_ms=5000))
        [[p]] = [r.partition_result for r in resp.replica_election_results]
        assert (p.partition_id, p.error_code, p.error_message) == (
            0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            "Failed to elect leader for partition pref-0 under strategy "
            "PreferredReplicaPartitionLeaderElectionStrategy")
        resp = raw_request(cluster.brokers[b].port, Req[2](election_type=0, timeout_ms=5000,
                                                           topic_partitions=[T(topic="pref", partitions=[0])]))
        assert resp.error_code == 0
        assert resp.replica_election_results[0].partition_result[0].error_code == ErrorCode.NOT_CONTROLLER
        # All partitions (null): those needing no election are left out of the answer.
        resp = raw_request(cluster.brokers[c].port, Req[2](election_type=0, timeout_ms=5000, topic_partitions=None))
        answered = {(r.topic, p.partition_id): p.error_code for r in resp.replica_election_results
                    for p in r.partition_result}
        assert ErrorCode.ELECTION_NOT_NEEDED not in answered.values()
        assert answered[("solo", 0)] == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    finally:
        zk.close()
        cluster.cleanup()
