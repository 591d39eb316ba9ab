"""One secured broker for the module's tests (five listeners, see support.secured_props) and its certificates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.testing import EmbeddedBroker, free_port
from tests.security.support import LISTENERS, Pki, add_scram_user, secured_props

SCRAM_USERS = {"bob": "bob-secret", "carol": "carol-secret"}


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki.make(tmp_path_factory.mktemp("pki"))


class Secured:
    def __init__(self, broker: EmbeddedBroker, ports: dict[str, int], pki: Pki) -> None:
        self.broker = broker
        self.ports = ports
        self.pki = pki

    def bootstrap(self, listener: str) -> str:
        return f"127.0.0.1:{self.ports[listener]}"


@pytest.fixture(scope="session")
def secured(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    ports = {name: free_port() for name in LISTENERS}
    broker = EmbeddedBroker(secured_props(pki, ports), data_dir=Path(tmp_path_factory.mktemp("secured")),
                            port=ports["PLAINTEXT"]).start()
    try:
        for user, password in SCRAM_USERS.items():
            add_scram_user(broker.bootstrap, user, password)
        yield Secured(broker, ports, pki)
    finally:
        broker.stop()
