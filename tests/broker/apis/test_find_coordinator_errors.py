"""FindCoordinator: every code of `broker.apis.find_coordinator.ERRORS`, over a real socket with our codec."""

from __future__ import annotations

from broker.apis import find_coordinator
from protocol import ApiKey, request_class
from protocol.errors import ErrorCode

from .acl_support import denied
from .group_support import coordinator_ready
from .share_state_support import coordinated
from .support import Brokers, Producer, error_path_test

Req = request_class(ApiKey.FIND_COORDINATOR)

PRODUCERS: dict[ErrorCode, Producer] = {
    ErrorCode.INVALID_REQUEST: lambda b: b.call(Req[4](key_type=2, coordinator_keys=["any:AAAAAAAAAAAAAAAAAAAAAA:0"])),
    # the first lookup on a broker of its own starts creating __transaction_state
    ErrorCode.COORDINATOR_NOT_AVAILABLE: lambda b: b.call(Req[3](key="first", key_type=1),
                                                          b.other(broker_id="36").port),
}

PRODUCERS.update({
    ErrorCode.GROUP_AUTHORIZATION_FAILED: lambda b: b.call(Req[3](key="acl-group", key_type=0), denied(b)),
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: lambda b: b.call(Req[3](key="acl-txn", key_type=1), denied(b)),
    # share keys are asked by brokers only
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: lambda b: b.call(Req[6](key_type=2,
                                                                    coordinator_keys=["g:AAAAAAAAAAAAAAAAAAAAAA:0"]),
                                                             denied(b)),
})

test_errors = error_path_test(find_coordinator, PRODUCERS)


def test_an_empty_group_id_is_placed_like_any_other(brokers: Brokers) -> None:
    """As Kafka 3.7: FindCoordinator places "" (the group APIs then answer INVALID_GROUP_ID)."""
    coordinator_ready(brokers, brokers.single.port)
    response = brokers.call(Req[4](key_type=0, coordinator_keys=[""]))
    assert response.coordinators[0].error_code == ErrorCode.NONE
    assert response.coordinators[0].node_id == brokers.single.server.broker_id


def test_share_keys(brokers: Brokers) -> None:
    """Key type 2 (v6): a malformed key is INVALID_REQUEST; a well-formed one names this broker once
    __share_group_state exists (created on first use)."""
    tid = "AAAAAAAAAAAAAAAAAAAAAA"
    bad = ["any", f"g:{tid}", f" :{tid}:0", "g:not-a-topic-id:0", f"g:{tid}:x", f"g:{tid}: 1", f"g:{tid}:1_0",
           "g:AAAAAAAAAA!AAAAAAAAAAA:0", f"g:{tid}:99999999999"]
    response = brokers.call(Req[6](key_type=2, coordinator_keys=bad))
    assert [c.error_code for c in response.coordinators] == [ErrorCode.INVALID_REQUEST] * len(bad)
    assert coordinated(brokers, brokers.single.port) == brokers.single.server.broker_id
