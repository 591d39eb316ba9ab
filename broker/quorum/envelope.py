"""Envelopes (KIP-590) at the quorum controller: a broker forwarding a client's admin
request wraps it with the client's principal and address, and the controller authorizes the inner request with
that principal. A mixin of the quorum controller (broker/quorum/controller.py) and
of the test controller.

Rules (Kafka 3.9's ControllerApis.handleEnvelopeRequest and EnvelopeUtils):
- The principal is DefaultKafkaPrincipalBuilder's serialization (protocol/envelope.py): bytes that do not read
  as one answer the Envelope with PRINCIPAL_DESERIALIZATION_FAILURE; a client address that is not 4 or 16 bytes,
  an inner request that does not decode, or an inner Envelope answer INVALID_REQUEST; all without a response
  inside.
- Otherwise the inner request is handled as if it came directly, and its response, with the inner request's
  correlation id, is the Envelope's ResponseData (error NONE). Every forwarded request is recorded in
  `forwarded` as (api key, principal "Type:name", client address, client id), and in `requests` after its
  Envelope.
- Authorization (`admin_principals`, None: everyone may): a principal not in the set is refused what Kafka's
  ControllerApis refuses without the ACL: CreateTopics and DeleteTopics per topic TOPIC_AUTHORIZATION_FAILED
  (CREATE / DELETE), CreateAcls and DeleteAcls CLUSTER_AUTHORIZATION_FAILED per creation or filter (ALTER on
  the cluster), AlterClientQuotas CLUSTER_AUTHORIZATION_FAILED per entry (ALTER_CONFIGS on the cluster).
  Requests that come without an Envelope (the broker's own) are not checked.
"""

from __future__ import annotations

from typing import Any

from protocol import ApiKey, decode_request, encode_response, response_class
from protocol.envelope import PrincipalDeserializationError, address_from_bytes, deserialize_principal
from protocol.errors import ErrorCode, ProtocolError


class EnvelopeRules:
    admin_principals: set[str] | None
    forwarded: list[tuple[int, str, str, str | None]]
    requests: list[tuple[int, Any]]

    async def _dispatch(self, request: Any) -> Any:
        raise NotImplementedError

    async def _envelope(self, request: Any) -> Any:
        Resp = response_class(ApiKey.ENVELOPE)[request.API_VERSION]
        if request.request_principal is None:
            return Resp(response_data=None, error_code=ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE)
        try:
            principal_type, name, _ = deserialize_principal(bytes(request.request_principal))
        except PrincipalDeserializationError:
            return Resp(response_data=None, error_code=ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE)
        try:
            address = address_from_bytes(bytes(request.client_host_address))
            inner = decode_request(bytearray(request.request_data))
        except (ValueError, ProtocolError):
            return Resp(response_data=None, error_code=ErrorCode.INVALID_REQUEST)
        if inner.API_KEY == ApiKey.ENVELOPE:
            return Resp(response_data=None, error_code=ErrorCode.INVALID_REQUEST)
        principal = f"{principal_type}:{name}"
        self.forwarded.append((inner.API_KEY, principal, address, inner.header.client_id))
        self.requests.append((inner.API_KEY, inner))
        response = self._refusal(inner, principal)
        if response is None:
            response = await self._dispatch(inner)
        response.with_header(correlation_id=inner.header.correlation_id)
        return Resp(response_data=encode_response(response), error_code=ErrorCode.NONE)

    def _refusal(self, request: Any, principal: str) -> Any:
        """The inner request's answer when `principal` may not do it, else None."""
        if self.admin_principals is None or principal in self.admin_principals:
            return None
        Resp = response_class(request.API_KEY)[request.API_VERSION]
        denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        cluster = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        if request.API_KEY == ApiKey.CREATE_TOPICS:
            return Resp(throttle_time_ms=0, topics=[
                Resp.CreatableTopicResult(name=t.name, error_code=denied, error_message=None, num_partitions=-1,
                                          replication_factor=-1, configs=None) for t in request.topics])
        if request.API_KEY == ApiKey.DELETE_TOPICS:
            names = [t.name for t in request.topics] if request.API_VERSION >= 6 else list(request.topic_names)
            return Resp(throttle_time_ms=0, responses=[
                Resp.DeletableTopicResult(name=n, error_code=denied) for n in names])
        if request.API_KEY == ApiKey.CREATE_ACLS:
            return Resp(throttle_time_ms=0, results=[
                Resp.AclCreationResult(error_code=cluster, error_message=None) for _ in request.creations])
        if request.API_KEY == ApiKey.DELETE_ACLS:
            return Resp(throttle_time_ms=0, filter_results=[
                Resp.DeleteAclsFilterResult(error_code=cluster, error_message=None, matching_acls=[])
                for _ in request.filters])
        if request.API_KEY == ApiKey.ALTER_CLIENT_QUOTAS:
            return Resp(throttle_time_ms=0, entries=[
                Resp.EntryData(error_code=cluster, error_message=None, entity=[
                    Resp.EntryData.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
                    for e in entry.entity]) for entry in request.entries])
        return None
