"""Writing transactions into a broker the way the coordinator will, before there is one (not a test module).

- `append(broker, tp, batch, origin=...)`: one batch through the broker's `ReplicaManager.append_records` on
  its loop (acks=-1), as a client (transactional data) or as the coordinator (`AppendOrigin.COORDINATOR`:
  COMMIT/ABORT markers, internal topics allowed); returns the base offset. `broker` is an `EmbeddedBroker`.
- `partition_state(broker, tp)`: (last stable offset, high watermark) as the partition reports them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from protocol.errors import ErrorCode
from storage import AppendOrigin, TopicPartition


def append(broker: Any, tp: TopicPartition, batch: bytearray, *, origin: AppendOrigin = AppendOrigin.CLIENT) -> int:
    async def run() -> Any:
        rm = broker.server.replica_manager
        result = rm.append_records(5000, -1, {tp: memoryview(batch)}, origin=origin,
                                   internal_topics_allowed=origin is AppendOrigin.COORDINATOR)
        if isinstance(result, asyncio.Future):
            result = await result
        return result[tp]

    result = broker.call(run)
    assert result.error == ErrorCode.NONE, result
    return result.base_offset


def partition_state(broker: Any, tp: TopicPartition) -> tuple[int, int]:
    partition = broker.server.replica_manager.partitions[tp]
    return broker.call(lambda: (partition.last_stable_offset, partition.high_watermark))
