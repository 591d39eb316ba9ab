"""Hypothesis strategies that build any request or response of any version from its JSON schema.

Values respect the schema (nullability per version, tagged fields, flexible encodings) and add unknown
tagged fields to flexible structs, so round trips exercise the whole codec.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st
from kafka.protocol.schemas.fields.array import ArrayField
from kafka.protocol.schemas.fields.codecs import (
    UUID,
    BitField,
    Boolean,
    Bytes,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    String,
    UnsignedInt16,
)
from kafka.protocol.schemas.fields.simple import SimpleField
from kafka.protocol.schemas.fields.struct import StructField

from protocol.kafka_python_ext import RecordsView

_INTS = {
    Int8: (-(2**7), 2**7 - 1),
    Int16: (-(2**15), 2**15 - 1),
    Int32: (-(2**31), 2**31 - 1),
    Int64: (-(2**63), 2**63 - 1),
    UnsignedInt16: (0, 2**16 - 1),
}
# Unknown tag numbers well above any tag Kafka 3.9 defines.
_UNKNOWN_TAGS = st.dictionaries(
    st.integers(min_value=40, max_value=300).map(lambda t: f'_{t}'), st.binary(max_size=8), max_size=2)


def _simple(field: SimpleField, nullable: bool) -> st.SearchStrategy[Any]:
    codec = field._type
    if codec in _INTS:
        low, high = _INTS[codec]
        base: st.SearchStrategy[Any] = st.integers(min_value=low, max_value=high)
    elif codec is Boolean:
        base = st.booleans()
    elif codec is Float64:
        base = st.floats(allow_nan=False)
    elif codec is UUID:
        # The zero UUID decodes as None, which encodes back to zero: both spellings are the same bytes.
        return st.one_of(st.none(), st.uuids())
    elif isinstance(codec, String):
        base = st.text(max_size=12)
    elif codec is Bytes or codec is RecordsView:
        base = st.binary(max_size=24)
    elif codec is BitField:
        return st.one_of(st.none(), st.sets(st.integers(min_value=0, max_value=30), max_size=4))
    else:
        raise NotImplementedError(f'no strategy for {codec}')
    return st.one_of(st.none(), base) if nullable else base


def value_for(field: Any, version: int, flexible: bool, in_tag: bool = False,
              element: bool = False) -> st.SearchStrategy[Any]:
    # An array's nullableVersions is about the array, never its elements.
    nullable = field.nullable_for_version_q(version) and not element
    in_tag = in_tag or (flexible and field.tagged_field_q(version))
    if isinstance(field, ArrayField):  # StructArrayField is an ArrayField too
        items = value_for(field.array_of, version, flexible, in_tag, element=True)
        lists = st.lists(items, max_size=3)
        return st.one_of(st.none(), lists) if nullable else lists
    if isinstance(field, StructField):
        struct = struct_strategy(field, version, flexible, in_tag)
        return st.one_of(st.none(), struct) if nullable else struct
    return _simple(field, nullable)


def struct_strategy(struct: StructField, version: int, flexible: bool, in_tag: bool) -> st.SearchStrategy[Any]:
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for field in struct._fields:
        if not field.for_version_q(version):
            continue
        if field.tagged_field_q(version) and not flexible:
            continue
        fields[field.name] = value_for(field, version, flexible, in_tag)
    cls = struct.data_class
    # Values of tagged fields are written with an empty nested tag section: no unknown tags there.
    if flexible and not in_tag:
        fields['unknown'] = _UNKNOWN_TAGS

    def build(values: dict[str, Any]) -> Any:
        unknown = values.pop('unknown', None) or {}
        return cls(**values, **unknown)

    return st.fixed_dictionaries(fields).map(build)


def message_strategy(cls: Any, version: int) -> st.SearchStrategy[Any]:
    """A top-level message of `cls` at `version`, without header."""
    flexible = cls.flexible_version_q(version)
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for field in cls._struct._fields:
        if not field.for_version_q(version):
            continue
        if field.tagged_field_q(version) and not flexible:
            continue
        fields[field.name] = value_for(field, version, flexible)
    if flexible:
        fields['unknown'] = _UNKNOWN_TAGS

    def build(values: dict[str, Any]) -> Any:
        unknown = values.pop('unknown', None) or {}
        return cls[version](**values, **unknown)

    return st.fixed_dictionaries(fields).map(build)


def zero_uuid() -> uuid.UUID:
    return uuid.UUID(int=0)


def _sample_simple(field: SimpleField) -> Any:
    codec = field._type
    if codec in _INTS:
        return 1
    if codec is Boolean:
        return True
    if codec is Float64:
        return 0.5
    if codec is UUID:
        return uuid.UUID(int=0x1234)
    if isinstance(codec, String):
        return 'ab'
    if codec is Bytes or codec is RecordsView:
        return b'xyz'
    if codec is BitField:
        return {1, 3}
    raise NotImplementedError(f'no sample for {codec}')


def _sample_value(field: Any, version: int, flexible: bool, in_tag: bool) -> Any:
    in_tag = in_tag or (flexible and field.tagged_field_q(version))
    if isinstance(field, ArrayField):
        return [_sample_value(field.array_of, version, flexible, in_tag)]
    if isinstance(field, StructField):
        return _sample_struct(field.data_class, field, version, flexible, in_tag)
    return _sample_simple(field)


def _sample_struct(cls: Any, struct: StructField, version: int, flexible: bool, in_tag: bool) -> Any:
    values: dict[str, Any] = {}
    for field in struct._fields:
        if field.for_version_q(version) and (flexible or not field.tagged_field_q(version)):
            values[field.name] = _sample_value(field, version, flexible, in_tag)
    if flexible and not in_tag:
        values['_77'] = b'\x01\x02'
    return cls(**values)


def sample_message(cls: Any, version: int) -> Any:
    """A deterministic message with every field present, one element per array, tags and unknown tags set."""
    flexible = cls.flexible_version_q(version)
    return _sample_struct(cls[version], cls._struct, version, flexible, False)
