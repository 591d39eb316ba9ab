"""Kafka's ACL model: resource types, operations, permission and pattern types, bindings and their filters.

Contract: pure values, no I/O. The numeric codes are Kafka's wire codes (org.apache.kafka.common.acl and
.resource); `name_of` gives the PascalCase names Kafka writes into ZooKeeper ("TransactionalId",
"ClusterAction", "Allow") and `from_name` reads those or the upper-case form, as Kafka's SecurityUtils does.
Matching follows Kafka's filters:
- a pattern filter with pattern type MATCH matches literal patterns of the same name, the literal wildcard
  `*`, and prefixed patterns the name starts with; ANY matches every pattern type by exact name; a
  concrete type matches that type by exact name; a null name matches every name;
- an entry filter matches on each of principal, host (null: any), operation, permission type (ANY: any).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


CLUSTER_NAME = "kafka-cluster"
WILDCARD_RESOURCE = "*"
WILDCARD_PRINCIPAL = "User:*"
WILDCARD_HOST = "*"
ANONYMOUS = "User:ANONYMOUS"

# Concrete resource types: those an ACL can be stored for (ZooKeeper has a folder for each).
RESOURCE_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID,
                  ResourceType.DELEGATION_TOKEN, ResourceType.USER)

# The operations each resource type supports, in Kafka's order (authorized_operations answers these).
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
                         AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS,
                         AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
                           AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}

# An ALLOW for any of these grants the key (Kafka: READ, WRITE, DELETE, ALTER imply DESCRIBE; ALTER_CONFIGS
# implies DESCRIBE_CONFIGS). A DENY is never widened this way.
IMPLIED_BY: dict[AclOperation, tuple[AclOperation, ...]] = {
    AclOperation.DESCRIBE: (AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                            AclOperation.ALTER),
    AclOperation.DESCRIBE_CONFIGS: (AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
}

E = TypeVar("E", bound=IntEnum)


def name_of(value: IntEnum) -> str:
    """Kafka's PascalCase name: TRANSACTIONAL_ID -> "TransactionalId"."""
    return "".join(part.capitalize() for part in value.name.split("_"))


def from_name(enum: type[E], text: str) -> E:
    """The member named `text` in PascalCase or upper case (ValueError otherwise)."""
    for member in enum:
        if text in (member.name, name_of(member)):
            return member
    raise ValueError(f"unknown {enum.__name__} {text!r}")


def code_of(enum: type[E], code: int) -> E:
    """A wire code as the enum; codes Kafka does not know read as UNKNOWN, as Kafka's fromCode does."""
    try:
        return enum(code)
    except ValueError:
        return enum(0)


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: PermissionType


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def is_unknown(self) -> bool:
        return 0 in (self.pattern.resource_type, self.pattern.pattern_type, self.entry.operation,
                     self.entry.permission_type)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: PermissionType

    def is_unknown(self) -> bool:
        return 0 in (self.resource_type, self.pattern_type, self.operation, self.permission_type)

    def matches_pattern(self, pattern: ResourcePattern) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:  # MATCH
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        return pattern.pattern_type == PatternType.PREFIXED and self.name.startswith(pattern.name)

    def matches_entry(self, entry: AccessControlEntry) -> bool:
        return ((self.principal is None or self.principal == entry.principal)
                and (self.host is None or self.host == entry.host)
                and (self.operation == AclOperation.ANY or self.operation == entry.operation)
                and (self.permission_type == PermissionType.ANY or self.permission_type == entry.permission_type))

    def matches(self, binding: AclBinding) -> bool:
        return self.matches_pattern(binding.pattern) and self.matches_entry(binding.entry)

    def exact_pattern(self) -> ResourcePattern | None:
        """The one pattern this filter can match, if it names one (concrete type, name and pattern type)."""
        if (self.name is None or self.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN)
                or self.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED)):
            return None
        return ResourcePattern(self.resource_type, self.name, self.pattern_type)
