"""Our specs for the ZooKeeper-era inter-broker APIs against Kafka's documented wire layouts.

Each expected frame is spelled out field by field from Kafka's protocol (the layouts Kafka 3.9's
controller sends), independently of our JSON specs, and must equal what the codec encodes and decodes.
"""

from __future__ import annotations

import struct
import uuid

from protocol import ApiKey, decode_request, decode_response, encode_request, encode_response
from protocol.messages import (
    AlterPartitionRequest,
    ControlledShutdownResponse,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)


def _s(value: str) -> bytes:
    return struct.pack('>h', len(value)) + value.encode()


def _cs(value: str) -> bytes:  # compact string
    return bytes([len(value) + 1]) + value.encode()


def _i32s(values: list[int]) -> bytes:
    return struct.pack('>i', len(values)) + b''.join(struct.pack('>i', v) for v in values)


def _ci32s(values: list[int]) -> bytes:  # compact array of int32
    return bytes([len(values) + 1]) + b''.join(struct.pack('>i', v) for v in values)


def _round_trip_request(message, correlation_id: int, expected_body: bytes, header: bytes) -> None:
    message.with_header(correlation_id=correlation_id, client_id='ctl')
    frame = encode_request(message)
    assert frame == header + expected_body
    assert encode_request(decode_request(frame)) == frame


def test_leader_and_isr_v0_layout() -> None:
    state = LeaderAndIsrRequest.LeaderAndIsrPartitionState
    message = LeaderAndIsrRequest[0](
        controller_id=1, controller_epoch=2,
        ungrouped_partition_states=[state(topic_name='t', partition_index=0, controller_epoch=2, leader=1,
                                          leader_epoch=5, isr=[1, 2], partition_epoch=7, replicas=[1, 2])],
        live_leaders=[LeaderAndIsrRequest.LeaderAndIsrLiveLeader(broker_id=1, host_name='h', port=9092)])
    body = (struct.pack('>ii', 1, 2)
            + struct.pack('>i', 1) + _s('t') + struct.pack('>iiii', 0, 2, 1, 5) + _i32s([1, 2])
            + struct.pack('>i', 7) + _i32s([1, 2])
            + struct.pack('>i', 1) + struct.pack('>i', 1) + _s('h') + struct.pack('>i', 9092))
    _round_trip_request(message, 3, body, struct.pack('>hhi', 4, 0, 3) + _s('ctl'))


def test_leader_and_isr_v7_layout() -> None:
    topic_id = uuid.UUID(int=0xABCDEF)
    topic = LeaderAndIsrRequest.LeaderAndIsrTopicState
    state = LeaderAndIsrRequest.LeaderAndIsrPartitionState
    message = LeaderAndIsrRequest[7](
        controller_id=1, is_k_raft_controller=False, controller_epoch=2, broker_epoch=100, request_type=1,
        topic_states=[topic(topic_name='t', topic_id=topic_id, partition_states=[
            state(partition_index=0, controller_epoch=2, leader=1, leader_epoch=5, isr=[1], partition_epoch=7,
                  replicas=[1], adding_replicas=[], removing_replicas=[], is_new=True, leader_recovery_state=0)])],
        live_leaders=[LeaderAndIsrRequest.LeaderAndIsrLiveLeader(broker_id=1, host_name='h', port=9092)])
    partition = (struct.pack('>iiii', 0, 2, 1, 5) + _ci32s([1]) + struct.pack('>i', 7) + _ci32s([1])
                 + _ci32s([]) + _ci32s([]) + b'\x01' + b'\x00' + b'\x00')
    body = (struct.pack('>i', 1) + b'\x00' + struct.pack('>iqb', 2, 100, 1)
            + b'\x02' + _cs('t') + topic_id.bytes + b'\x02' + partition + b'\x00'
            + b'\x02' + struct.pack('>i', 1) + _cs('h') + struct.pack('>i', 9092) + b'\x00'
            + b'\x00')
    _round_trip_request(message, 3, body, struct.pack('>hhi', 4, 7, 3) + _s('ctl') + b'\x00')


def test_update_metadata_v0_and_v5_layouts() -> None:
    state = UpdateMetadataRequest.UpdateMetadataPartitionState
    broker = UpdateMetadataRequest.UpdateMetadataBroker
    message = UpdateMetadataRequest[0](
        controller_id=1, controller_epoch=2,
        ungrouped_partition_states=[state(topic_name='t', partition_index=0, controller_epoch=2, leader=1,
                                          leader_epoch=5, isr=[1], zk_version=7, replicas=[1])],
        live_brokers=[broker(id=1, v0_host='h', v0_port=9092)])
    body = (struct.pack('>ii', 1, 2)
            + struct.pack('>i', 1) + _s('t') + struct.pack('>iiii', 0, 2, 1, 5) + _i32s([1])
            + struct.pack('>i', 7) + _i32s([1])
            + struct.pack('>i', 1) + struct.pack('>i', 1) + _s('h') + struct.pack('>i', 9092))
    _round_trip_request(message, 4, body, struct.pack('>hhi', 6, 0, 4) + _s('ctl'))

    topic = UpdateMetadataRequest.UpdateMetadataTopicState
    endpoint = broker.UpdateMetadataEndpoint
    message = UpdateMetadataRequest[5](
        controller_id=1, controller_epoch=2, broker_epoch=9,
        topic_states=[topic(topic_name='t', partition_states=[
            state(partition_index=0, controller_epoch=2, leader=1, leader_epoch=5, isr=[1], zk_version=7,
                  replicas=[1], offline_replicas=[])])],
        live_brokers=[broker(id=1, endpoints=[endpoint(port=9092, host='h', listener='PLAINTEXT',
                                                       security_protocol=0)], rack=None)])
    body = (struct.pack('>iiq', 1, 2, 9)
            + struct.pack('>i', 1) + _s('t') + struct.pack('>i', 1) + struct.pack('>iiii', 0, 2, 1, 5)
            + _i32s([1]) + struct.pack('>i', 7) + _i32s([1]) + _i32s([])
            + struct.pack('>i', 1) + struct.pack('>i', 1)
            + struct.pack('>i', 1) + struct.pack('>i', 9092) + _s('h') + _s('PLAINTEXT') + struct.pack('>h', 0)
            + struct.pack('>h', -1))
    _round_trip_request(message, 4, body, struct.pack('>hhi', 6, 5, 4) + _s('ctl'))


def test_stop_replica_v0_and_v3_layouts() -> None:
    message = StopReplicaRequest[0](
        controller_id=1, controller_epoch=2, delete_partitions=True,
        ungrouped_partitions=[StopReplicaRequest.StopReplicaPartitionV0(topic_name='t', partition_index=3)])
    body = struct.pack('>ii?', 1, 2, True) + struct.pack('>i', 1) + _s('t') + struct.pack('>i', 3)
    _round_trip_request(message, 5, body, struct.pack('>hhi', 5, 0, 5) + _s('ctl'))

    topic = StopReplicaRequest.StopReplicaTopicState
    message = StopReplicaRequest[3](
        controller_id=1, controller_epoch=2, broker_epoch=9,
        topic_states=[topic(topic_name='t', partition_states=[
            topic.StopReplicaPartitionState(partition_index=3, leader_epoch=4, delete_partition=False)])])
    body = (struct.pack('>iiq', 1, 2, 9) + b'\x02' + _cs('t') + b'\x02' + struct.pack('>ii?', 3, 4, False)
            + b'\x00' + b'\x00' + b'\x00')
    _round_trip_request(message, 5, body, struct.pack('>hhi', 5, 3, 5) + _s('ctl') + b'\x00')


def test_alter_partition_v0_and_v3_layouts() -> None:
    topic = AlterPartitionRequest.TopicData
    message = AlterPartitionRequest[0](broker_id=1, broker_epoch=9, topics=[topic(topic_name='t', partitions=[
        topic.PartitionData(partition_index=0, leader_epoch=5, new_isr=[1, 2], partition_epoch=7)])])
    body = (struct.pack('>iq', 1, 9) + b'\x02' + _cs('t') + b'\x02' + struct.pack('>ii', 0, 5)
            + _ci32s([1, 2]) + struct.pack('>i', 7) + b'\x00' + b'\x00' + b'\x00')
    _round_trip_request(message, 6, body, struct.pack('>hhi', 56, 0, 6) + _s('ctl') + b'\x00')

    topic_id = uuid.UUID(int=7)
    partition = topic.PartitionData
    message = AlterPartitionRequest[3](broker_id=1, broker_epoch=9, topics=[topic(topic_id=topic_id, partitions=[
        partition(partition_index=0, leader_epoch=5, new_isr_with_epochs=[
            partition.BrokerState(broker_id=2, broker_epoch=11)], leader_recovery_state=0, partition_epoch=7)])])
    body = (struct.pack('>iq', 1, 9) + b'\x02' + topic_id.bytes + b'\x02' + struct.pack('>ii', 0, 5)
            + b'\x02' + struct.pack('>iq', 2, 11) + b'\x00' + struct.pack('>bi', 0, 7) + b'\x00' + b'\x00'
            + b'\x00')
    _round_trip_request(message, 6, body, struct.pack('>hhi', 56, 3, 6) + _s('ctl') + b'\x00')


def test_controlled_shutdown_v3_response_layout() -> None:
    remaining = ControlledShutdownResponse.RemainingPartition
    response = ControlledShutdownResponse[3](error_code=0, remaining_partitions=[
        remaining(topic_name='t', partition_index=2)])
    response.with_header(correlation_id=8)
    frame = encode_response(response)
    assert frame == struct.pack('>i', 8) + b'\x00' + struct.pack('>h', 0) + b'\x02' + _cs('t') \
        + struct.pack('>i', 2) + b'\x00' + b'\x00'
    assert encode_response(decode_response(frame, ApiKey.CONTROLLED_SHUTDOWN, 3)) == frame
