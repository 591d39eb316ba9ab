"""The one place that chooses the `Persister` share-partition leaders use (broker/coordinator/share/persister.py).

A broker's is its `RpcPersister` (rpc_persister.py): share-partition state lives in `__share_group_state`, kept
by the share coordinator, so it survives restarts and leader moves. The in-memory one
(broker/coordinator/share/memory_persister.py) serves a server without one (request-handler tests that build a bare
server).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.coordinator.share.memory_persister import InMemoryPersister
from broker.coordinator.share.persister import Persister

if TYPE_CHECKING:
    from broker.share.manager import ShareServer


def create_persister(server: ShareServer) -> Persister:
    persister = getattr(server, "share_persister", None)
    return persister if persister is not None else InMemoryPersister()
