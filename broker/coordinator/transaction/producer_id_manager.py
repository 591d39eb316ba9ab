"""What the transaction coordinator needs to hand out producer ids (Kafka's ProducerIdManager trait).

`ProducerIdManager.generate()` answers a producer id never handed out before, in this cluster, or raises
`ProducerIdsUnavailable` while the next block is on its way (InitProducerId then answers
COORDINATOR_LOAD_IN_PROGRESS and the client retries). The implementations (a file, the metadata store, or
AllocateProducerIds to the controller) are in broker/controller/producer_ids.py and
broker/kraft/broker_server.py; the coordinator sees only this protocol.
"""

from __future__ import annotations

from typing import Protocol


class ProducerIdManager(Protocol):
    def generate(self) -> int: ...


class ProducerIdsUnavailable(Exception):
    """No producer id to hand out until the controller answers (COORDINATOR_LOAD_IN_PROGRESS)."""
