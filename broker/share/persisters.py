"""The one place that chooses the `Persister` share-partition leaders use (broker/share/persister.py).

Today the in-memory one (memory_persister.py): share-partition state lives as long as the broker process.
The network persister reaching the share coordinator (`__share_group_state`) replaces it here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.share.memory_persister import InMemoryPersister
from broker.share.persister import Persister

if TYPE_CHECKING:
    from broker.server import KafkaServer


def create_persister(server: KafkaServer) -> Persister:
    return InMemoryPersister()
