"""The producer id block znode (Kafka's ZkProducerIdManager on /latest_producer_id_block).

Contract: `allocate_producer_id_block(broker_id)` claims the next block (first, last), inclusive, with a write
conditional on the znode's version; a lost race is retried, so two brokers never get overlapping blocks.
"""

from __future__ import annotations

from broker.metadata import znodes
from broker.metadata.store.base import StoreBase
from broker.metadata.types import (
    BadVersionError,
    MetadataError,
    NodeExistsError,
)


class ProducerIdBlockZnode(StoreBase):
    """/latest_producer_id_block."""

    def allocate_producer_id_block(
        self, broker_id: int, block_size: int = znodes.PRODUCER_ID_BLOCK_SIZE, max_attempts: int = 100
    ) -> tuple[int, int]:
        """Claim the next block of producer ids for this broker: (first, last), inclusive.

        As Kafka's ZkProducerIdManager: read /latest_producer_id_block, write the next block
        conditionally on its version, retry if another broker won the race.
        """
        max_producer_id = (1 << 63) - 1
        for _ in range(max_attempts):
            node = self._tree.get(znodes.PRODUCER_ID_BLOCK)
            if node is None:
                try:
                    self._tree.create(znodes.PRODUCER_ID_BLOCK)
                except NodeExistsError:
                    pass
                continue
            current = znodes.decode_producer_id_block(node[0])
            first = 0 if current is None else current[2] + 1
            last = first + block_size - 1
            if last > max_producer_id:
                raise MetadataError("producer ids exhausted")
            try:
                self._tree.set(
                    znodes.PRODUCER_ID_BLOCK, znodes.encode_producer_id_block(broker_id, first, last), node[1]
                )
                return first, last
            except BadVersionError:
                continue
        raise MetadataError(f"could not claim a producer id block in {max_attempts} attempts")

