"""Writing transactions into a broker the way the coordinator will, before there is one (not a test module).

- `append(broker, tp, batch, origin=...)`: one batch through the broker's `ReplicaManager.append_records` on
  its loop (acks=-1), as a client (transactional data) or as the coordinator (`AppendOrigin.COORDINATOR`:
  COMMIT/ABORT markers, internal topics allowed); returns the base offset. `broker` is an `EmbeddedBroker`.
  A client's transactional batch carries the KIP-890 verification guard the leader hands out, as if the
  coordinator had confirmed the partition is in the transaction.
- `partition_state(broker, tp)`: (last stable offset, high watermark) as the partition reports them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from protocol.errors import ErrorCode
from protocol.records import RecordBatch
from storage import AppendOrigin, TopicPartition


def append(broker: Any, tp: TopicPartition, batch: bytearray, *, origin: AppendOrigin = AppendOrigin.CLIENT) -> int:
    async def run() -> Any:
        rm = broker.server.replica_manager
        guards = None
        header = RecordBatch(memoryview(batch))
        if origin is AppendOrigin.CLIENT and header.is_transactional:
            guard = rm.partitions[tp].maybe_start_transaction_verification(
                header.producer_id, header.base_sequence, header.producer_epoch)
            guards = {tp: guard}
        result = rm.append_records(5000, -1, {tp: memoryview(batch)}, origin=origin,
                                   internal_topics_allowed=origin is AppendOrigin.COORDINATOR,
                                   verification_guards=guards)
        if isinstance(result, asyncio.Future):
            result = await result
        return result[tp]

    result = broker.call(run)
    assert result.error == ErrorCode.NONE, result
    return result.base_offset


def partition_state(broker: Any, tp: TopicPartition) -> tuple[int, int]:
    partition = broker.server.replica_manager.partitions[tp]
    return broker.call(lambda: (partition.last_stable_offset, partition.high_watermark))
