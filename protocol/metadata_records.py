"""KRaft metadata records: Kafka's `__cluster_metadata` record types and the frame that carries them.

Contract:
- One class per record type, built from Kafka's JSON schemas (Kafka 4.4 layouts: 3.9's, ClearElrRecord (4.0),
  the cordoned log dirs of RegisterBrokerRecord v4 / BrokerRegistrationChangeRecord v3 (4.3) and
  UnregisterControllerRecord (4.4), in `protocol/schemas/metadata/`) through kafka-python's machinery
  (`load_json=`), as every other message here: compiled codecs, snake_case attributes, unknown tagged fields
  kept in `unknown_tags`. Build one with `TopicRecord(name='t', topic_id=uuid)`; `RECORD_CLASSES[api_key]`
  gives the class of a type.
- The metadata record frame (Kafka's `AbstractApiMessageSerde`, the value of every record in a data
  batch of the metadata log): unsigned varint frame version (1), unsigned varint record type (the
  schema's apiKey), unsigned varint record version, then the record at that version.
  `encode_metadata_record(message, version)` writes it; `decode_metadata_record(value)` reads it back as
  an `ApiMessageAndVersion`. Frame version 0 (the KRaft preview of Kafka 2.8), another frame version, an
  unknown type, a version outside the schema's, a body that does not parse, or bytes left after the body
  raise `MetadataParseError` (a `MalformedMessage`), as Kafka's serde raises MetadataParseException.
- Control records of the metadata log (KIP-595/630/853): a control batch's record key is
  `version int16 (0) | type int16`; the value is the control message itself, without a frame.
  `encode_control_record(message)` gives `(key, value)`; `decode_control_record(key, value)` gives
  `(KRaftControlRecordType, message)`. As Kafka's `ControlRecordUtils`, values are read at version 0
  and bytes after the message are ignored (a LeaderChangeMessage v1 is read as v0).
- Batches of the metadata log (Kafka's RecordsIterator): `decode_metadata_batches(buf)` reads v2 batches
  (CRC checked, decompressed) as `MetadataBatch`es: a data batch's records are metadata record frames
  (no key, a non-empty value, no headers); a control batch's are KRaft control records. Anything else
  raises `MetadataParseError`.
- Kafka's field `Version` of the control messages is named `RecordVersion` here (attribute
  `record_version`): a field named `version` would shadow kafka-python's `DataContainer.version`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, NamedTuple

from kafka.protocol.data_container import DataContainer, SlotsBuilder
from kafka.protocol.schemas import BaseField, StructField, load_json
from kafka.protocol.schemas.fields.codecs import EncodeBufferPool

from protocol.errors import MalformedMessage
from protocol.kafka_python_ext import read_uvarint, uvarint_bytes
from records import CorruptRecordError, InvalidRecordError, RecordBatch, iter_batches
from records.record import KRaftControlRecordType

_SCHEMAS = 'protocol.schemas.metadata'

FRAME_VERSION = 1
# Kafka's ControlRecordType key layout: version int16, type int16.
CONTROL_RECORD_KEY_VERSION = 0


class MetadataParseError(MalformedMessage):
    """A metadata log record that cannot be decoded (Kafka's MetadataParseException)."""


class _RecordData(SlotsBuilder):
    """Metaclass: loads the schema (as kafka-python's JsonSchemaData) and records its versions, apiKey and
    flexible range on the class."""

    def __new__(mcs, name: str, bases: tuple, attrs: dict, **kw: Any) -> _RecordData:
        if kw.get('init', True):
            spec = load_json(name, package=kw.get('load_json'))
            attrs['_json'] = spec
            attrs['_struct'] = _struct_of(spec)
        return super().__new__(mcs, name, bases, attrs)

    def __init__(cls, name: str, bases: tuple, attrs: dict, **kw: Any) -> None:
        super().__init__(name, bases, attrs, **kw)
        if kw.get('init', True):
            spec = cls._json
            if spec['type'] not in ('metadata', 'data'):
                raise TypeError(f"{name}: schema type {spec['type']!r} is not a metadata or data record")
            cls._valid_versions = BaseField.parse_versions(spec['validVersions'])
            cls._flexible_versions = BaseField.parse_versions(spec['flexibleVersions'])
            cls.record_type = spec.get('apiKey', -1)
            cls.min_version, cls.max_version = cls._valid_versions


def _struct_of(spec: dict) -> StructField:
    if spec['fields']:
        return StructField(spec)
    # kafka-python reads an empty field list as "no fields" (None); NoOpRecord and EndTransactionRecord
    # have none, so build the struct around a placeholder field and empty it.
    placeholder = {'name': 'Placeholder', 'type': 'int8', 'versions': '0+'}
    struct = StructField(dict(spec, fields=[placeholder]))
    struct._fields = ()
    struct._field_map = {}
    return struct


class MetadataRecord(DataContainer, metaclass=_RecordData, init=False):
    """A record of the metadata log or a KRaft control message; one subclass per Kafka schema."""

    record_type: int
    min_version: int
    max_version: int
    _valid_versions: tuple[int, int]
    _flexible_versions: tuple[int, int] | None

    @classmethod
    def flexible_version_q(cls, version: int) -> bool:
        fv = cls._flexible_versions
        return fv is not None and fv[0] <= version <= fv[1]

    @classmethod
    def check_version(cls, version: int) -> None:
        if not cls.min_version <= version <= cls.max_version:
            raise MetadataParseError(
                f'{cls.__name__} version {version} outside {cls.min_version}-{cls.max_version}')

    def to_bytes(self, version: int) -> bytes:
        """The record's body at `version` (no frame)."""
        self.check_version(version)
        flexible = self.flexible_version_q(version)
        with EncodeBufferPool.acquire() as out:
            self._struct.compiled_encode_into(version, compact=flexible, tagged=flexible)(self, out)
            return out.result()

    @classmethod
    def from_bytes(cls, data: Any, version: int, pos: int = 0) -> tuple[MetadataRecord, int]:
        """Decode a body at `version` from `pos`; returns the record and the position after it."""
        cls.check_version(version)
        flexible = cls.flexible_version_q(version)
        decoder = cls._struct.compiled_decode_from(version, compact=flexible, tagged=flexible, data_class=cls)
        if not isinstance(data, memoryview):
            data = memoryview(data)
        try:
            record, end = decoder(data, pos)
        except Exception as e:  # noqa: BLE001 - any failure inside the generated decoder is malformed input
            raise MetadataParseError(f'malformed {cls.__name__} v{version}: {e!r}') from None
        if end > len(data):
            raise MetadataParseError(f'{cls.__name__} v{version} overruns its bytes')
        record._version = version
        return record, end


# --- the metadata records (metadata/src/main/resources/common/metadata/) --------------------------------

class RegisterBrokerRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class UnregisterBrokerRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class TopicRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class PartitionRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class ConfigRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class PartitionChangeRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class FenceBrokerRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class UnfenceBrokerRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class RemoveTopicRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class DelegationTokenRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class UserScramCredentialRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class FeatureLevelRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class ClientQuotaRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class ProducerIdsRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class BrokerRegistrationChangeRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class AccessControlEntryRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class RemoveAccessControlEntryRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class NoOpRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class ZkMigrationStateRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class RemoveUserScramCredentialRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class BeginTransactionRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class EndTransactionRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class AbortTransactionRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class RemoveDelegationTokenRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class RegisterControllerRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class ClearElrRecord(MetadataRecord, load_json=_SCHEMAS):
    """Kafka 4.0+ (metadata.version 4.0-IV1, KIP-966): clears the ELR and last-known ELR of every partition
    of the named topic, or of every topic when the name is empty."""


class UnregisterControllerRecord(MetadataRecord, load_json=_SCHEMAS):
    """Kafka 4.4+ (metadata.version 4.4-IV2): a controller's registration is removed."""


# --- the KRaft control messages (clients/src/main/resources/common/message/) ----------------------------

class LeaderChangeMessage(MetadataRecord, load_json=_SCHEMAS):
    pass


class SnapshotHeaderRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class SnapshotFooterRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class KRaftVersionRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class VotersRecord(MetadataRecord, load_json=_SCHEMAS):
    pass


class MetadataRecordType(IntEnum):
    """Kafka's MetadataRecordType: the apiKey of each metadata record schema (6, 13 and 16 are unused)."""

    REGISTER_BROKER_RECORD = 0
    UNREGISTER_BROKER_RECORD = 1
    TOPIC_RECORD = 2
    PARTITION_RECORD = 3
    CONFIG_RECORD = 4
    PARTITION_CHANGE_RECORD = 5
    FENCE_BROKER_RECORD = 7
    UNFENCE_BROKER_RECORD = 8
    REMOVE_TOPIC_RECORD = 9
    DELEGATION_TOKEN_RECORD = 10
    USER_SCRAM_CREDENTIAL_RECORD = 11
    FEATURE_LEVEL_RECORD = 12
    CLIENT_QUOTA_RECORD = 14
    PRODUCER_IDS_RECORD = 15
    BROKER_REGISTRATION_CHANGE_RECORD = 17
    ACCESS_CONTROL_ENTRY_RECORD = 18
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD = 19
    NO_OP_RECORD = 20
    ZK_MIGRATION_STATE_RECORD = 21
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD = 22
    BEGIN_TRANSACTION_RECORD = 23
    END_TRANSACTION_RECORD = 24
    ABORT_TRANSACTION_RECORD = 25
    REMOVE_DELEGATION_TOKEN_RECORD = 26
    REGISTER_CONTROLLER_RECORD = 27
    CLEAR_ELR_RECORD = 28
    UNREGISTER_CONTROLLER_RECORD = 29


RECORD_CLASSES: dict[int, type[MetadataRecord]] = {
    cls.record_type: cls
    for cls in (
        RegisterBrokerRecord, UnregisterBrokerRecord, TopicRecord, PartitionRecord, ConfigRecord,
        PartitionChangeRecord, FenceBrokerRecord, UnfenceBrokerRecord, RemoveTopicRecord,
        DelegationTokenRecord, UserScramCredentialRecord, FeatureLevelRecord, ClientQuotaRecord,
        ProducerIdsRecord, BrokerRegistrationChangeRecord, AccessControlEntryRecord,
        RemoveAccessControlEntryRecord, NoOpRecord, ZkMigrationStateRecord, RemoveUserScramCredentialRecord,
        BeginTransactionRecord, EndTransactionRecord, AbortTransactionRecord, RemoveDelegationTokenRecord,
        RegisterControllerRecord, ClearElrRecord, UnregisterControllerRecord,
    )
}


CONTROL_CLASSES: dict[KRaftControlRecordType, type[MetadataRecord]] = {
    KRaftControlRecordType.LEADER_CHANGE: LeaderChangeMessage,
    KRaftControlRecordType.SNAPSHOT_HEADER: SnapshotHeaderRecord,
    KRaftControlRecordType.SNAPSHOT_FOOTER: SnapshotFooterRecord,
    KRaftControlRecordType.KRAFT_VERSION: KRaftVersionRecord,
    KRaftControlRecordType.KRAFT_VOTERS: VotersRecord,
}
_CONTROL_TYPE_OF = {cls: t for t, cls in CONTROL_CLASSES.items()}
# Kafka's ControlRecordUtils *_CURRENT_VERSION: every control message is written and read at version 0.
CONTROL_RECORD_VERSION = 0


class ApiMessageAndVersion(NamedTuple):
    message: MetadataRecord
    version: int


# --- the metadata record frame -----------------------------------------------------------------------

def encode_metadata_record(message: MetadataRecord, version: int | None = None) -> bytes:
    """`message` framed as a metadata log record value; `version` defaults to the message's own, else
    the highest its schema defines."""
    cls = type(message)
    if cls.record_type < 0:
        raise TypeError(f'{cls.__name__} is a control message, not a metadata record')
    if version is None:
        version = message._version if message._version is not None else cls.max_version
    body = message.to_bytes(version)
    return uvarint_bytes(FRAME_VERSION) + uvarint_bytes(cls.record_type) + uvarint_bytes(version) + body


def _read_short(data: Any, pos: int, what: str) -> tuple[int, int]:
    try:
        value, pos = read_uvarint(data, pos)
    except MalformedMessage as e:
        raise MetadataParseError(f'error while reading {what}: {e}') from None
    if value > 0x7FFF:
        raise MetadataParseError(f'value for {what} was too large')
    return value, pos


def decode_metadata_record(value: bytes | bytearray | memoryview) -> ApiMessageAndVersion:
    """One metadata log record value (a whole frame: nothing may follow the record)."""
    data = value if isinstance(value, memoryview) else memoryview(value)
    frame_version, pos = _read_short(data, 0, 'frame version')
    if frame_version == 0:
        raise MetadataParseError('metadata record frame version 0 (the KRaft preview of Kafka 2.8) is not supported')
    if frame_version != FRAME_VERSION:
        raise MetadataParseError(
            f'unknown metadata record frame version {frame_version} (only {FRAME_VERSION} is supported)')
    record_type, pos = _read_short(data, pos, 'type')
    version, pos = _read_short(data, pos, 'version')
    cls = RECORD_CLASSES.get(record_type)
    if cls is None:
        raise MetadataParseError(f'unknown metadata record type {record_type}')
    message, pos = cls.from_bytes(data, version, pos)
    if pos != len(data):
        raise MetadataParseError(f'found {len(data) - pos} byte(s) of garbage after record type {record_type}')
    return ApiMessageAndVersion(message, version)


# --- KRaft control records ------------------------------------------------------------------------------

def control_record_key(control_type: int) -> bytes:
    return CONTROL_RECORD_KEY_VERSION.to_bytes(2, 'big') + int(control_type).to_bytes(2, 'big', signed=True)


def encode_control_record(message: MetadataRecord) -> tuple[bytes, bytes]:
    """(key, value) of the control record carrying `message` (a LeaderChange, SnapshotHeader/Footer,
    KRaftVersion or Voters message)."""
    control_type = _CONTROL_TYPE_OF.get(type(message))
    if control_type is None:
        raise TypeError(f'{type(message).__name__} is not a KRaft control message')
    return control_record_key(control_type), message.to_bytes(CONTROL_RECORD_VERSION)


def control_type_of(key: bytes | bytearray | memoryview | None) -> int:
    """The type number of a control record key (Kafka's ControlRecordType.parseTypeId)."""
    if key is None or len(key) < 4:
        raise MetadataParseError('control record key shorter than 4 bytes')
    key_version = int.from_bytes(key[0:2], 'big', signed=True)
    if key_version < 0:
        raise MetadataParseError(f'invalid control record key version {key_version}')
    return int.from_bytes(key[2:4], 'big', signed=True)


def decode_control_record(
    key: bytes | bytearray | memoryview | None, value: bytes | bytearray | memoryview | None
) -> tuple[KRaftControlRecordType, MetadataRecord]:
    """A KRaft control record; another type (a transaction marker, a future type) raises MetadataParseError,
    as Kafka's RecordsIterator rejects a control record type it does not know."""
    type_id = control_type_of(key)
    try:
        control_type = KRaftControlRecordType(type_id)
    except ValueError:
        raise MetadataParseError(f'unknown KRaft control record type {type_id}') from None
    if not value:
        raise MetadataParseError(f'{control_type.name} control record without a value')
    message, _ = CONTROL_CLASSES[control_type].from_bytes(value, CONTROL_RECORD_VERSION)
    return control_type, message


# --- batches of the metadata log ---------------------------------------------------------------------------

@dataclass
class MetadataBatch:
    base_offset: int
    epoch: int  # the batch's partition leader epoch: the raft epoch it was written in
    append_timestamp: int  # its max timestamp (Kafka's Batch.appendTimestamp)
    last_offset: int
    size_in_bytes: int
    is_control: bool
    records: list[ApiMessageAndVersion] = field(default_factory=list)
    control_records: list[tuple[KRaftControlRecordType, MetadataRecord]] = field(default_factory=list)


def decode_metadata_batch(batch: RecordBatch) -> MetadataBatch:
    try:
        batch.ensure_valid()
        out = MetadataBatch(batch.base_offset, batch.partition_leader_epoch, batch.max_timestamp,
                            batch.last_offset, batch.size_in_bytes, batch.is_control)
        for record in batch.records():
            if record.headers:
                raise MetadataParseError(f'record at offset {record.offset} has headers')
            if not record.value:
                raise MetadataParseError(f'record at offset {record.offset} has no value')
            if batch.is_control:
                out.control_records.append(decode_control_record(record.key, record.value))
            elif record.key is not None:
                raise MetadataParseError(f'metadata record at offset {record.offset} has a key')
            else:
                out.records.append(decode_metadata_record(record.value))
    except (CorruptRecordError, InvalidRecordError) as e:
        raise MetadataParseError(f'batch at offset {batch.base_offset}: {e}') from None
    return out


def decode_metadata_batches(buf: bytes | bytearray | memoryview) -> Iterator[MetadataBatch]:
    """Every batch of a run of whole v2 batches (a fetched `__cluster_metadata` slice, a segment)."""
    try:
        batches = list(iter_batches(buf))
    except (CorruptRecordError, InvalidRecordError) as e:
        raise MetadataParseError(str(e)) from None
    for batch in batches:
        yield decode_metadata_batch(batch)  # iter_batches refuses magic 0/1 without allow_legacy
