"""What we add to kafka-python's message machinery, installed once when `protocol` is imported.

Contract:
- `records_view`: a field type for `records` fields whose decoder returns a zero-copy slice of the
  input (a `memoryview`, writable when the frame was a `bytearray`) instead of a `bytes` copy, after
  checking the declared length against the bytes left. Used by our ProduceRequest and FetchResponse.
- Tagged fields: kafka-python decodes unknown tags into `unknown_tags` but never writes them back, and
  decodes each tagged section by copying the rest of the frame. We replace both: tagged sections are
  decoded in place (bounded by each tag's declared size, tags strictly ascending, the known tag's value
  must fill its size exactly) and encoded with unknown tags merged in ascending tag order, so a frame
  decodes and re-encodes to the same bytes.
- Compiled decoders reject array lengths below -1 or above the bytes left (when elements cannot be
  empty), string/bytes lengths below -1 or past the end of the frame, and unsigned varints longer than 5 bytes,
  instead of reading them as empty, null, short or a wrapped value. A null (length -1) in a string, bytes or
  array field the schema does not make nullable at that version is refused at decode, as Kafka's generated
  readers refuse it: "non-nullable field <camelCaseName> was serialized as null" (tagged fields too). So no
  handler ever sees None where Kafka's schema promises a value. The check sits in the null branch only.
- Every failure here raises `MalformedMessage`; the codec wraps anything else.

- Speed: an unset field's default is served from a per-class cache, and an empty tagged section of a
  data object is written inline by the compiled encoders.

These patches change kafka-python's class behaviour process-wide. They only make it stricter on bad
input and complete on unknown tags; valid frames decode to the same values as before.
"""

from __future__ import annotations

import re
from typing import Any

from kafka.protocol.data_container import DataContainer
from kafka.protocol.schemas.fields.array import ArrayField
from kafka.protocol.schemas.fields.codecs.tagged_fields import TaggedFields
from kafka.protocol.schemas.fields.codecs.types import UUID, Bytes, UnsignedVarInt32
from kafka.protocol.schemas.fields.simple import SimpleField
from kafka.protocol.schemas.fields.struct import StructField
from kafka.protocol.schemas.fields.struct_array import StructArrayField

from protocol.errors import MalformedMessage

_MISSING = object()


def read_uvarint(data: Any, pos: int) -> tuple[int, int]:
    """Kafka's unsigned varint (at most 5 bytes for 32 bits); longer encodings are malformed."""
    value = 0
    shift = 0
    end = len(data)
    while True:
        if pos >= end:
            raise MalformedMessage('truncated varint')
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift >= 35:
            raise MalformedMessage('varint longer than 5 bytes')


_SMALL_UVARINTS = tuple(bytes((i,)) for i in range(128))


def uvarint_bytes(value: int) -> bytes:
    if 0 <= value < 128:
        return _SMALL_UVARINTS[value]
    out = bytearray()
    while value & ~0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _BoundedReader:
    """File-like reader over one tagged value's bytes, for kafka-python's non-compiled decoders."""

    __slots__ = ('data', 'pos', 'end')

    def __init__(self, data: Any, pos: int, end: int) -> None:
        self.data = data
        self.pos = pos
        self.end = end

    def read(self, n: int | None = -1) -> bytes:
        if n is None or n < 0:
            n = self.end - self.pos
        if self.pos + n > self.end:
            raise MalformedMessage('tagged field value overruns its declared size')
        chunk = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return chunk

    def tell(self) -> int:
        return self.pos


def decode_tagged_fields(tagged: TaggedFields, obj: Any, data: Any, pos: int, version: int) -> int:
    """Decode one tagged-fields section at `pos` into `obj`; returns the position after it."""
    count, pos = read_uvarint(data, pos)
    # Each tag takes at least two bytes (tag and size varints), which bounds the loop by the frame.
    if count * 2 > len(data) - pos:
        raise MalformedMessage('tagged field count exceeds the bytes left')
    last_tag = -1
    known = tagged._tags
    for _ in range(count):
        tag, pos = read_uvarint(data, pos)
        size, pos = read_uvarint(data, pos)
        if tag <= last_tag:
            raise MalformedMessage('tagged fields out of order or repeated')
        last_tag = tag
        end = pos + size
        if end > len(data):
            raise MalformedMessage('tagged field overruns the frame')
        field = known.get(tag)
        if field is None:
            if obj.unknown_tags is None:
                obj.unknown_tags = {}
            obj.unknown_tags[f'_{tag}'] = bytes(data[pos:end])
        else:
            reader = _BoundedReader(data, pos, end)
            value = field.decode(reader, version=version, compact=True, tagged=None)
            if value is None and not field.nullable_for_version_q(version) and _nullable_type(field):
                raise MalformedMessage(f'non-nullable field {wire_name(field)} was serialized as null')
            if reader.pos != end:
                raise MalformedMessage('tagged field value shorter than its declared size')
            if obj.tags is None:
                obj.tags = set()
            obj.tags.add(field.name)
            setattr(obj, field.name, value)
        pos = end
    return pos


def _nullable_type(field: Any) -> bool:
    """Whether None is the null of the field's type (strings, bytes, arrays, structs) rather than a value (a zero
    UUID decodes as None too)."""
    return not isinstance(field, SimpleField) or field._type is not UUID


def _tag_entries(tagged: TaggedFields, item: Any, version: int | None) -> list[tuple[int, bytes]]:
    entries: list[tuple[int, bytes]] = []
    if isinstance(item, tuple) or item is None or isinstance(item, (str, int, float, bytes)):
        return entries
    is_dict = isinstance(item, dict)
    for name, field in tagged._names.items():
        value = item.get(name, _MISSING) if is_dict else getattr(item, name, _MISSING)
        if value is _MISSING or value == field.default:
            continue
        # Struct values carry their own (empty) tagged section: tagged=None writes a single 0 byte.
        entries.append((field.tag, field.encode(value, version=version, compact=True, tagged=None)))
    if is_dict:
        unknown = {k: v for k, v in item.items() if isinstance(k, str) and k.startswith('_')}
    else:
        unknown = getattr(item, 'unknown_tags', None) or {}
    for key, raw in unknown.items():
        entries.append((int(key[1:]), bytes(raw)))
    if len(entries) > 1:
        entries.sort(key=lambda e: e[0])
    return entries


def _encode_tagged(self: TaggedFields, item: Any, version: int | None = None) -> bytes:
    if not isinstance(item, (dict, tuple)) and getattr(item, 'unknown_tags', None) is None:
        for name, default in _defaults(self):
            if getattr(item, name, default) != default:
                break
        else:
            return b'\x00'
    entries = _tag_entries(self, item, version)
    parts = [uvarint_bytes(len(entries))]
    for tag, raw in entries:
        parts.append(uvarint_bytes(tag))
        parts.append(uvarint_bytes(len(raw)))
        parts.append(raw)
    return b''.join(parts)


def _defaults(tagged: TaggedFields) -> tuple[tuple[str, Any], ...]:
    cached = tagged.__dict__.get('_name_defaults')
    if cached is None:
        cached = tagged._name_defaults = tuple((name, f.default) for name, f in tagged._names.items())
    return cached


def _encode_tagged_into(self: TaggedFields, item: Any, out: Any, version: int | None = None) -> None:
    # Fast path for the common case, a data object with no tag set: one zero byte.
    if not isinstance(item, (dict, tuple)) and getattr(item, 'unknown_tags', None) is None:
        for name, default in _defaults(self):
            if getattr(item, name, default) != default:
                break
        else:
            out.ensure(1)
            out.buf[out.pos] = 0
            out.pos += 1
            return
    raw = _encode_tagged(self, item, version)
    n = len(raw)
    out.ensure(n)
    out.buf[out.pos:out.pos + n] = raw
    out.pos += n


def _emit_tagged_decode(self: StructField, ctx: Any, var_name: str, indent: str, version: int) -> None:
    tf_var = ctx.next_var('tf')
    ctx.globs[tf_var] = self.tagged_fields(version)
    ctx.globs['_decode_tagged_fields'] = decode_tagged_fields
    ctx.emit(indent, f'pos = _decode_tagged_fields({tf_var}, {var_name}, data, pos, {version})')


_TAG_CALL = re.compile(r'^(\s*)(_tf\d+)\.encode_into\((.+), out, version=(\d+)\)$')


def _inline_empty_tags(ctx: Any) -> None:
    """Rewrite each emitted tagged-section call so the common case (no tag set) writes one zero byte inline.

    kafka-python emits `out.pos = pos; _tfN.encode_into(item, out, version=V); pos = out.pos; ...` for
    every struct of a flexible version; the call dominates encode time for many-partition messages.
    """
    lines = ctx.lines
    i = 0
    while i < len(lines):
        match = _TAG_CALL.match(lines[i])
        if match is None or i == 0 or lines[i - 1].strip() != 'out.pos = pos':
            i += 1
            continue
        indent, tf_var, item, _ = match.groups()
        tagged = ctx.globs[tf_var]
        checks = [f'getattr({item}, "unknown_tags", 0) is None']
        for name, default in _defaults(tagged):
            dv = ctx.next_var('tdef')
            ctx.globs[dv] = default
            checks.append(f'{item}.{name} == {dv}')
        fast = [
            f'{indent}if {" and ".join(checks)}:',
            f'{indent}    if pos + 1 > _cap:',
            f'{indent}        out.pos = pos; out.ensure(1); buf = out.buf; _cap = len(buf)',
            f'{indent}    buf[pos] = 0',
            f'{indent}    pos += 1',
            f'{indent}else:',
        ]
        # The original five lines (out.pos = pos ... _cap = len(buf)) become the else branch.
        slow = ['    ' + line for line in lines[i - 1:i + 4]]
        lines[i - 1:i + 4] = fast + slow
        i = i - 1 + len(fast) + len(slow)


_original_encode_context = StructField.encode_into__optimized_context


def _encode_context(self: StructField, version: int, compact: bool = False, tagged: bool = False) -> Any:
    ctx = _original_encode_context(self, version, compact=compact, tagged=tagged)
    if tagged:
        _inline_empty_tags(ctx)
    return ctx


_FIELD_DEFAULTS: dict[type, dict[str, Any]] = {}


def _field_default(field: Any) -> Any:
    """A field's schema default; None for a struct field, which kafka-python gives none (FetchSnapshot's
    SnapshotId is the first untagged one we load)."""
    try:
        return field.default
    except (AttributeError, NotImplementedError):
        return None


def _data_container_getattr(self: DataContainer, name: str) -> Any:
    """DataContainer.__getattr__ (the schema default of a field never set), with the defaults cached."""
    cls = type(self)
    defaults = _FIELD_DEFAULTS.get(cls)
    if defaults is None:
        defaults = _FIELD_DEFAULTS[cls] = {n: _field_default(f) for n, f in cls._struct.fields.items()}
    try:
        return defaults[name]
    except KeyError:
        raise AttributeError(f"'{cls.__name__}' object has no attribute '{name}'") from None


def _data_container_init(self: DataContainer, *args: Any, version: int | None = None,
                         **field_vals: Any) -> None:
    """DataContainer.__init__ that stores every field, given or default, whatever the version.

    kafka-python leaves fields unset when no version is given and serves their defaults from
    __getattr__ (an exception and a Python call per read); the encoders read every field, so we store
    the defaults once here. Values read back are the same either way.
    """
    struct = self._struct
    if version is not None and not struct.min_version <= version <= struct.max_version:
        raise ValueError(f'Invalid version: {version} (min={struct.min_version}, max={struct.max_version})')
    self._version = version
    if args:
        names = struct.untagged_fields(version) if version is not None else struct._fields
        if len(args) > len(names):
            raise ValueError(f'{len(args)} positional values for {len(names)} fields')
        for field, value in zip(names, args, strict=False):
            field_vals[field.name] = value
    self.tags = None
    self.unknown_tags = None
    for field in struct._fields:
        name = field.name
        if name in field_vals:
            if field._tag is not None:
                if self.tags is None:
                    self.tags = set()
                self.tags.add(name)
            setattr(self, name, field_vals.pop(name))
        else:
            setattr(self, name, _field_default(field))
    for name in [n for n in field_vals if n.startswith('_')]:
        if self.unknown_tags is None:
            self.unknown_tags = {}
        self.unknown_tags[name] = field_vals.pop(name)
    if field_vals:
        raise ValueError(f'Unrecognized fields for type {struct.name}: {field_vals}')


def _min_element_size_is_positive(element: Any, version: int, tagged: bool) -> bool:
    if not isinstance(element, StructField):
        return True  # every simple type takes at least one byte
    return bool(tagged) or any(not f.tagged_field_q(version) for f in element.untagged_fields(version))


def wire_name(field: Any) -> str:
    """A field's name as Kafka's generated code writes it in errors (camelCase: `topicData`)."""
    name = field._name
    return name[:1].lower() + name[1:]


def _null_branch(ctx: Any, start: int, test: re.Pattern[str], field: Any, version: Any) -> None:
    """After the emitted null test (`if _n == -1:` / `if _ln < 0:`) of a field not nullable at `version`, raise
    where kafka-python would decode None: Kafka's readers refuse such a request ("non-nullable field ... was
    serialized as null"). The branch runs only for a null, so valid frames pay nothing."""
    if version is None or field.nullable_for_version_q(version):
        return
    message = f'non-nullable field {wire_name(field)} was serialized as null'
    for i in range(start, len(ctx.lines)):
        if test.match(ctx.lines[i]) and ctx.lines[i + 1].rstrip().endswith(' = None'):
            indent = ctx.lines[i + 1][:len(ctx.lines[i + 1]) - len(ctx.lines[i + 1].lstrip())]
            ctx.lines[i + 1] = f'{indent}raise _MalformedMessage({message!r})'
            return


def _guard_array_decode(original: Any) -> Any:
    """Wrap an array decoder emitter: reject lengths below -1, counts larger than the bytes left, and a null
    array where the schema does not allow one.

    kafka-python loops `range(n)` over the declared count; a count of -5 silently became an empty array
    and a huge count only failed once the data ran out. Kafka rejects both.
    """

    def emit(self: Any, ctx: Any, var_name: str, indent: str, version: Any = None, compact: bool = False,
             tagged: Any = False) -> None:
        start = len(ctx.lines)
        original(self, ctx, var_name, indent, version=version, compact=compact, tagged=tagged)
        ctx.globs['_MalformedMessage'] = MalformedMessage
        pattern = re.compile('^' + re.escape(indent) + r'if (_n\d+) == -1:$')
        for i in range(start, len(ctx.lines)):
            match = pattern.match(ctx.lines[i])
            if match:
                n = match.group(1)
                bound = f' or {n} > len(data) - pos' if _min_element_size_is_positive(
                    self.array_of, version, tagged) else ''
                ctx.lines.insert(i, f'{indent}if {n} < -1{bound}: raise _MalformedMessage('
                                    f'"bad array length of {wire_name(self)}")')
                break
        _null_branch(ctx, start, pattern, self, version)

    return emit


def _guard_length_decode(original: Any) -> Any:
    """Wrap a string/bytes decoder emitter: a classic length below -1 is malformed, not null; so are a length past
    the end of the frame and a null where the schema does not allow one."""

    def emit(self: Any, ctx: Any, var_name: str, indent: str, version: Any = None, compact: bool = False,
             tagged: Any = False) -> None:
        start = len(ctx.lines)
        original(self, ctx, var_name, indent, version=version, compact=compact, tagged=tagged)
        ctx.globs['_MalformedMessage'] = MalformedMessage
        pattern = re.compile('^' + re.escape(indent) + r'if (_ln\d+) < 0:$')
        for i in range(start, len(ctx.lines)):
            match = pattern.match(ctx.lines[i])
            if match:
                ln = match.group(1)
                # records_view checks its length against the frame itself: one comparison less per partition
                past = '' if self._type is RecordsView else f' or pos + {ln} > len(data)'
                ctx.lines.insert(i, f'{indent}if {ln} < -1{past}: raise _MalformedMessage('
                                    f'"length of {wire_name(self)} is negative or past the end of the frame")')
                break
        _null_branch(ctx, start, pattern, self, version)

    return emit


def _limit_varint_decode(original: Any) -> Any:
    """Wrap the inline unsigned-varint decoder emitter: more than 5 bytes is malformed, as in Kafka."""

    def emit(ctx: Any, var_name: str, indent: str) -> None:
        start = len(ctx.lines)
        original(ctx, var_name, indent)
        ctx.globs['_MalformedMessage'] = MalformedMessage
        pattern = re.compile('^' + re.escape(indent) + r'    (_sh\d+) \+= 7$')
        for i in range(start, len(ctx.lines)):
            match = pattern.match(ctx.lines[i])
            if match:
                shift = match.group(1)
                ctx.lines.insert(i + 1, f'{indent}    if {shift} > 28: raise _MalformedMessage("varint too long")')
                break

    return staticmethod(emit)


class RecordsView:
    """Codec for `records` fields: decoding yields a zero-copy slice of the frame."""

    fmt = Bytes.fmt
    size = 'variable'

    encode = Bytes.encode
    encode_into = Bytes.encode_into
    decode = Bytes.decode
    emit_encode_into = Bytes.emit_encode_into

    @classmethod
    def emit_decode_from(cls, ctx: Any, var_name: str, indent: str, compact: bool = False) -> None:
        ln = ctx.next_var('ln')
        ctx.globs['_MalformedMessage'] = MalformedMessage
        if compact:
            UnsignedVarInt32.emit_decode_from(ctx, ln, indent)
            ctx.emit(indent, f'{ln} -= 1')
        else:
            ctx.emit(indent, f'{ln} = unpack_from(">i", data, pos)[0]')
            ctx.emit(indent, 'pos += 4')
        ctx.emit(indent, f'if {ln} < 0:')
        ctx.emit(indent, f'    {var_name} = None')
        ctx.emit(indent, 'else:')
        ctx.emit(indent, f'    if pos + {ln} > len(data):')
        ctx.emit(indent, '        raise _MalformedMessage("records overrun the frame")')
        ctx.emit(indent, f'    {var_name} = data[pos:pos + {ln}]')
        ctx.emit(indent, f'    pos += {ln}')


def records_view_patch(json: dict) -> dict:
    """json_patch for message classes: every `records` field decodes as a zero-copy view."""

    def walk(fields: list[dict]) -> None:
        for field in fields:
            if field.get('type') == 'records':
                field['type'] = 'records_view'
            if 'fields' in field:
                walk(field['fields'])

    walk(json['fields'])
    return json


def install() -> None:
    if getattr(TaggedFields, '_kafka_wire_broker_ext', False):
        return
    SimpleField.TYPES['records_view'] = RecordsView
    TaggedFields.encode = _encode_tagged
    TaggedFields.encode_into = _encode_tagged_into
    StructField._emit_tagged_decode = _emit_tagged_decode
    StructField.encode_into__optimized_context = _encode_context
    DataContainer.__getattr__ = _data_container_getattr
    DataContainer.__init__ = _data_container_init
    ArrayField.emit_decode_from = _guard_array_decode(ArrayField.emit_decode_from)
    StructArrayField.emit_decode_from = _guard_array_decode(StructArrayField.emit_decode_from)
    SimpleField.emit_decode_from = _guard_length_decode(SimpleField.emit_decode_from)
    UnsignedVarInt32.emit_decode_from = _limit_varint_decode(UnsignedVarInt32.emit_decode_from)
    TaggedFields._kafka_wire_broker_ext = True


install()
