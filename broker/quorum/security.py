"""Client quotas, SCRAM credentials and ACLs of the quorum controller: the records Kafka
3.9's ClientQuotaControlManager, ScramControlManager and AclControlManager write for AlterClientQuotas,
AlterUserScramCredentials, CreateAcls and DeleteAcls. A mixin of the quorum controller
(broker/quorum/controller.py) and of the test controller (tests/kraft_controller.py). Dynamic broker configs
(ConfigRecords of BROKER resources) are in `_incremental_alter_configs` (broker/quorum/rules.py).

Rules (validation reuses the broker's own checks where Kafka's are the same):
- AlterClientQuotas: the entity user / client-id / both (ip entities are refused, as by our brokers, which do not
  enforce them), known keys, byte rates whole numbers (INVALID_REQUEST with the message otherwise); one
  ClientQuotaRecord per op (Remove for a removal); `validate_only` writes nothing.
- AlterUserScramCredentials: per user, deleting a credential not in the image RESOURCE_NOT_FOUND, iterations
  outside 4096..16384 UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM, a user named twice
  DUPLICATE_RESOURCE (the broker's handler rules); otherwise a UserScramCredentialRecord per upsertion (stored and
  server keys derived from the salted password) and a RemoveUserScramCredentialRecord per deletion.
- CreateAcls (AclControlManager.createAcls / validateNewAcl): INVALID_REQUEST for unknown, ANY or MATCH
  elements, a name with '/', a principal without a type, a CLUSTER resource not named kafka-cluster, an empty
  name; an ACL already in the image is not written again; else an AccessControlEntryRecord with a new id.
- DeleteAcls: every ACL of the image a filter matches, a RemoveAccessControlEntryRecord per ACL, each answered
  under the filter that matched it.
"""

from __future__ import annotations

import uuid
from typing import Any

from broker.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
    code_of,
)
from protocol import ApiKey, response_class
from protocol.errors import ErrorCode
from protocol.metadata_records import (
    AccessControlEntryRecord,
    ClientQuotaRecord,
    RemoveAccessControlEntryRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)

MECHANISM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


class _ImageCredentials:
    """The image's credentials seen through the interface the broker's AlterUserScramCredentials rules use;
    `alter` collects the records instead of writing."""

    def __init__(self, image: Any) -> None:
        self.image = image
        self.records: list[Any] = []

    def mechanisms(self, user: str) -> dict[str, Any]:
        names = {v: k for k, v in MECHANISM_CODES.items()}
        return {names[m]: c for (m, u), c in self.image.scram.items() if u == user and m in names}

    def alter(self, user: str, upserts: dict[str, Any], deletions: list[str]) -> None:
        for mechanism in deletions:
            self.records.append(RemoveUserScramCredentialRecord(name=user, mechanism=MECHANISM_CODES[mechanism],
                                                                version=0))
        for mechanism, c in upserts.items():
            self.records.append(UserScramCredentialRecord(
                name=user, mechanism=MECHANISM_CODES[mechanism], salt=c.salt, stored_key=c.stored_key,
                server_key=c.server_key, iterations=c.iterations, version=0))


class SecurityRules:
    """What the rules need from the controller they are mixed into."""

    image: Any
    is_leader: bool

    def append(self, messages: list[Any]) -> int:
        raise NotImplementedError

    @staticmethod
    def _response(request: Any, **fields: Any) -> Any:
        return response_class(request.API_KEY)[request.API_VERSION](**fields)

    async def _alter_client_quotas(self, request: Any) -> Any:
        from broker.apis.alter_client_quotas import _entity, _ops

        Entry = response_class(ApiKey.ALTER_CLIENT_QUOTAS).EntryData
        out, records = [], []
        for entry in request.entries:
            code, message = ErrorCode.NONE, None
            if not self.is_leader:
                code = ErrorCode.NOT_CONTROLLER
            else:
                try:
                    _entity(entry.entity)
                    _ops(entry.ops)
                except ValueError as e:
                    code, message = ErrorCode.INVALID_REQUEST, str(e)
                else:
                    entity = [ClientQuotaRecord.EntityData(entity_type=p.entity_type, entity_name=p.entity_name)
                              for p in entry.entity]
                    records += [ClientQuotaRecord(entity=entity, key=op.key, value=0.0 if op.remove else op.value,
                                                  remove=op.remove, version=0) for op in entry.ops]
            out.append(Entry(error_code=code, error_message=message, entity=[
                Entry.EntityData(entity_type=p.entity_type, entity_name=p.entity_name) for p in entry.entity]))
        if records and not request.validate_only:
            self.append(records)
        return self._response(request, throttle_time_ms=0, entries=out)

    async def _alter_user_scram_credentials(self, request: Any) -> Any:
        from broker.apis.alter_user_scram_credentials import _alter

        Result = response_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS).AlterUserScramCredentialsResult
        if not self.is_leader:
            users = sorted({x.name for x in [*request.upsertions, *request.deletions]})
            return self._response(request, throttle_time_ms=0, results=[
                Result(user=u, error_code=ErrorCode.NOT_CONTROLLER, error_message=None) for u in users])
        view = _ImageCredentials(self.image)
        results = _alter(view, list(request.upsertions), list(request.deletions))  # type: ignore[arg-type]
        if view.records:
            self.append(view.records)
        return self._response(request, throttle_time_ms=0, results=[
            Result(user=user, error_code=error, error_message=message) for user, error, message in results])

    def _image_bindings(self) -> dict[uuid.UUID, AclBinding]:
        return {acl_id: AclBinding(
            ResourcePattern(code_of(ResourceType, a.resource_type), a.resource_name,
                            code_of(PatternType, a.pattern_type)),
            AccessControlEntry(a.principal, a.host, code_of(AclOperation, a.operation),
                               code_of(PermissionType, a.permission_type)))
            for acl_id, a in self.image.acls.items()}

    async def _create_acls(self, request: Any) -> Any:
        from broker.apis import acl_common
        from broker.security.authorizer import _invalid_binding

        Result = response_class(ApiKey.CREATE_ACLS).AclCreationResult
        existing = set(self._image_bindings().values())
        out, records = [], []
        for c in request.creations:
            pattern_type = acl_common.pattern_type_of(c, request.API_VERSION, "resource_pattern_type")
            binding = AclBinding(
                ResourcePattern(code_of(ResourceType, c.resource_type), c.resource_name,
                                code_of(PatternType, pattern_type)),
                AccessControlEntry(c.principal, c.host, code_of(AclOperation, c.operation),
                                   code_of(PermissionType, c.permission_type)))
            error, message = ErrorCode.NONE, None
            if not self.is_leader:
                error = ErrorCode.NOT_CONTROLLER
            elif (invalid := _invalid_binding(binding)) is not None:
                error, message = ErrorCode.INVALID_REQUEST, invalid
            elif binding.pattern.resource_type == ResourceType.CLUSTER and binding.pattern.name != CLUSTER_NAME:
                error, message = ErrorCode.INVALID_REQUEST, (
                    f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
            elif not binding.pattern.name:
                error, message = ErrorCode.INVALID_REQUEST, "Invalid empty resource name"
            elif binding not in existing:
                existing.add(binding)
                p, e = binding.pattern, binding.entry
                records.append(AccessControlEntryRecord(
                    id=uuid.uuid4(), resource_type=int(p.resource_type), resource_name=p.name,
                    pattern_type=int(p.pattern_type), principal=e.principal, host=e.host,
                    operation=int(e.operation), permission_type=int(e.permission_type), version=0))
            out.append(Result(error_code=error, error_message=message))
        if records:
            self.append(records)
        return self._response(request, throttle_time_ms=0, results=out)

    async def _delete_acls(self, request: Any) -> Any:
        from broker.apis import acl_common

        FilterResult = response_class(ApiKey.DELETE_ACLS).DeleteAclsFilterResult
        Matching = FilterResult.DeleteAclsMatchingAcl
        bindings = self._image_bindings()
        removed: set[uuid.UUID] = set()
        out, records = [], []
        for f in request.filters:
            if not self.is_leader:
                out.append(FilterResult(error_code=ErrorCode.NOT_CONTROLLER, error_message=None, matching_acls=[]))
                continue
            pattern_type = acl_common.pattern_type_of(f, request.API_VERSION, "pattern_type_filter")
            flt = acl_common.binding_filter(f, pattern_type)
            matching = []
            for acl_id, b in sorted(bindings.items(), key=lambda kv: str(kv[0])):
                if acl_id in removed or not flt.matches(b):
                    continue
                removed.add(acl_id)
                records.append(RemoveAccessControlEntryRecord(id=acl_id, version=0))
                p, e = b.pattern, b.entry
                matching.append(Matching(error_code=0, error_message=None, resource_type=int(p.resource_type),
                                         resource_name=p.name, pattern_type=int(p.pattern_type),
                                         principal=e.principal, host=e.host, operation=int(e.operation),
                                         permission_type=int(e.permission_type)))
            out.append(FilterResult(error_code=0, error_message=None, matching_acls=matching))
        if records:
            self.append(records)
        return self._response(request, throttle_time_ms=0, filter_results=out)
