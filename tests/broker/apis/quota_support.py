"""A broker on which the codec tests' client (client id "raw") has used up its controller mutation quota."""

from __future__ import annotations

from protocol import ApiKey, request_class
from tests.e2e.support import wait_until

from .support import Brokers

Alter = request_class(ApiKey.ALTER_CLIENT_QUOTAS)


def mutation_quota_used_up(b: Brokers) -> int:
    """The port of a broker where client "raw" may mutate 0.001 partitions a second (a burst of 0.011) and has
    just created a topic (CreateTopics v4, permissive: created, the bucket left empty for ~1,000 s)."""
    broker = b.other(broker_rack="mutation-quota")
    if not broker.server.quotas.quotas:
        E = Alter.EntryData
        answer = b.call(Alter[1](entries=[E(entity=[E.EntityData(entity_type="client-id", entity_name="raw")],
                                            ops=[E.OpData(key="controller_mutation_rate", value=0.001,
                                                          remove=False)])], validate_only=False), broker.port)
        assert answer.entries[0].error_code == 0, answer
        wait_until(lambda: bool(broker.server.quotas.quotas), 10, "the mutation quota to apply")
        b.topic("mutation-quota-spent", port=broker.port)
    return broker.port
