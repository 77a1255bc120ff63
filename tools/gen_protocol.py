"""Generate the Kafka protocol codec from Apache Kafka's JSON message schemas.

Usage: python tools/gen_protocol.py [SCHEMA_DIR] [OUTPUT_DIR] [--apis APIS.json]

SCHEMA_DIR defaults to ../shared/kafka-protocol-4.4/message relative to the repository root
(Apache Kafka 4.4.0's schemas); OUTPUT_DIR defaults to kafka_fast/protocol/messages. Only the
messages of ``CLIENT_APIS`` (the APIs a client sends, with the highest version this client
negotiates for each) and ``CLIENT_DATA`` are generated: one module per schema file (e.g.
``metadata_request.py``) plus ``__init__.py``, an index that imports them lazily.

Every version comes from SCHEMA_DIR: every broker since Kafka 2.1 (all of 3.x) serves the
lowest versions 4.4 kept (KIP-896), and the share-group APIs start at version 1 (Kafka 4.1+;
Kafka 4.0's early-access version 0 is not spoken). ``--apis`` replaces the two tables with a
JSON file ``{"apis": {domain: {name: version}}, "data": [...]}``.

For every struct and version the generator emits straight-line decode and encode functions;
versions with the same wire layout share one function. Runs of fixed-width fields are read and
written with a single ``struct`` call. The output is committed and checked for drift by
tools/check_generated.py.
"""

from __future__ import annotations

import json
import keyword
import os
import re
import sys
import textwrap
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_SCHEMAS = os.path.join(ROOT, "..", "shared", "kafka-protocol-4.4", "message")
DEFAULT_OUT = os.path.join(ROOT, "kafka_fast", "protocol", "messages")

#: The APIs a client sends, by domain: API name (the schema name without Request/Response) ->
#: the highest version this client negotiates. The code fills every field up to that version;
#: a newer schema version enters negotiation only when its number is raised here (with the
#: code and tests for its new fields). Versions above it stay in the codec (encode/decode, and
#: requests at an explicit version). Left out on purpose, as broker-internal: the KRaft quorum
#: and broker-registration APIs (Vote, BeginQuorumEpoch, FetchSnapshot, BrokerHeartbeat,
#: AlterPartition, Envelope, AllocateProducerIds, ...), the share-group state APIs a share
#: coordinator sends its partition leaders (Initialize/Read/Write/DeleteShareGroupState,
#: ReadShareGroupStateSummary), WriteTxnMarkers (transaction coordinator to leaders) and the
#: ZooKeeper-era LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown.
CLIENT_APIS: dict[str, dict[str, int]] = {
    # Produce 13 names topics by ID (KIP-516; used when metadata gives every topic of the
    # request an ID), Fetch 18 adds a replica's high watermark (KIP-1166, a tagged field a
    # consumer leaves out), Metadata 13 a top-level error code (KIP-1102, read for
    # REBOOTSTRAP_REQUIRED). ListOffsets 11 (the earliest pending upload of KIP-1023) is not
    # filled or read by the client yet.
    "produce, fetch, metadata": {
        "Produce": 13, "Fetch": 18, "ListOffsets": 10, "Metadata": 13,
        "OffsetForLeaderEpoch": 4, "DescribeTopicPartitions": 0,
    },
    # ApiVersions 5 sends ClusterId and NodeId (KIP-1242).
    "connection set-up, SASL": {"ApiVersions": 4, "SaslHandshake": 1, "SaslAuthenticate": 2},
    # OffsetCommit 10 and OffsetFetch 10 name topics by ID only.
    "groups, classic protocol": {
        "FindCoordinator": 6, "JoinGroup": 9, "SyncGroup": 5, "Heartbeat": 4,
        "LeaveGroup": 5, "OffsetCommit": 9, "OffsetFetch": 9,
    },
    # ConsumerGroupDescribe 1 adds MemberType (KIP-1099).
    "groups, KIP-848 consumer protocol": {"ConsumerGroupHeartbeat": 1, "ConsumerGroupDescribe": 0},
    # Version 1 is KIP-932's first stable version (Kafka 4.1+); ShareFetch and ShareAcknowledge
    # 2 add RENEW acknowledgements and ShareFetch's acquire mode (KIP-1222, KIP-1206).
    "share groups (KIP-932)": {
        "ShareGroupHeartbeat": 1, "ShareGroupDescribe": 1, "ShareFetch": 2, "ShareAcknowledge": 2,
        "DescribeShareGroupOffsets": 1, "AlterShareGroupOffsets": 0, "DeleteShareGroupOffsets": 0,
    },
    "streams groups (KIP-1071)": {
        "StreamsGroupHeartbeat": 1, "StreamsGroupDescribe": 1,
        "StreamsGroupTopologyDescriptionUpdate": 0,
    },
    # InitProducerId 6 is two-phase commit (KIP-939), TxnOffsetCommit 6 names topics by ID.
    "transactions": {
        "InitProducerId": 5, "AddPartitionsToTxn": 5, "AddOffsetsToTxn": 4, "EndTxn": 5,
        "TxnOffsetCommit": 5,
    },
    # DescribeGroups 6 and DeleteGroups 3 add error messages / codes (KIP-1043).
    "admin: groups": {"DescribeGroups": 5, "ListGroups": 5, "DeleteGroups": 2, "OffsetDelete": 0},
    # AlterPartitionReassignments 1 adds AllowReplicationFactorChange.
    "admin: topics, partitions, records": {
        "CreateTopics": 7, "DeleteTopics": 6, "CreatePartitions": 3, "DeleteRecords": 2,
        "ElectLeaders": 2, "AlterPartitionReassignments": 0, "ListPartitionReassignments": 0,
    },
    # ListConfigResources 0 is the former ListClientMetricsResources; 1 adds ResourceTypes.
    "admin: configs": {
        "DescribeConfigs": 4, "AlterConfigs": 2, "IncrementalAlterConfigs": 1,
        "ListConfigResources": 0,
    },
    "admin: ACLs": {"DescribeAcls": 3, "CreateAcls": 3, "DeleteAcls": 3},
    "admin: SCRAM, delegation tokens": {
        "DescribeUserScramCredentials": 0, "AlterUserScramCredentials": 0,
        "CreateDelegationToken": 3, "RenewDelegationToken": 2, "ExpireDelegationToken": 2,
        "DescribeDelegationToken": 3,
    },
    "admin: client quotas": {"DescribeClientQuotas": 1, "AlterClientQuotas": 1},
    # ListTransactions 2 adds TransactionalIdPattern (KIP-1152).
    "admin: transactions": {"DescribeTransactions": 0, "ListTransactions": 1, "DescribeProducers": 0},
    # DescribeCluster 2 adds IncludeFencedBrokers, DescribeLogDirs 5 only new response fields,
    # AddRaftVoter 1 AckWhenCommitted.
    "admin: cluster, log dirs, quorum, features": {
        "DescribeCluster": 1, "DescribeLogDirs": 4, "AlterReplicaLogDirs": 2, "DescribeQuorum": 2,
        "UpdateFeatures": 2, "UnregisterBroker": 0, "UnregisterController": 0,
        "AddRaftVoter": 0, "RemoveRaftVoter": 0,
    },
    "client telemetry (KIP-714)": {"GetTelemetrySubscriptions": 0, "PushTelemetry": 0},
}

#: Messages without an API key a client writes or reads: the headers, and the classic consumer
#: group protocol's subscription and assignment (inside JoinGroup and SyncGroup). Control
#: records (ControlRecordTypeSchema, EndTxnMarker) are read by the record engine.
CLIENT_DATA: tuple[str, ...] = (
    "RequestHeader", "ResponseHeader", "ConsumerProtocolSubscription", "ConsumerProtocolAssignment",
)

OPEN = 0x7FFF
FIXED = {
    "bool": ("?", 1), "int8": ("b", 1), "int16": ("h", 2), "uint16": ("H", 2),
    "int32": ("i", 4), "uint32": ("I", 4), "int64": ("q", 8), "float64": ("d", 8),
}
VARIABLE = {"string", "bytes", "records"}
PRIMITIVES = set(FIXED) | VARIABLE | {"uuid"}
# Attribute names the base classes use.
RESERVED = {"unknown_tagged_fields", "encode", "decode", "encode_chunks", "encode_into"}


# ---------------------------------------------------------------- schema model

def strip_comments(text: str) -> str:
    """Remove // and /* */ comments outside string literals."""
    out = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
        elif c == '"':
            in_string = True
            out.append(c)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parse_versions(spec: str | None) -> tuple[int, int] | None:
    """'3+' -> (3, OPEN); '1-4' -> (1, 4); '2' -> (2, 2); 'none' / None -> None."""
    if spec is None or spec == "none":
        return None
    spec = str(spec).strip()
    if spec.endswith("+"):
        return int(spec[:-1]), OPEN
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


def within(rng: tuple[int, int] | None, v: int) -> bool:
    return rng is not None and rng[0] <= v <= rng[1]


def snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()
    if keyword.iskeyword(s) or s in RESERVED:
        s += "_"
    return s


@dataclass
class FieldDef:
    name: str
    attr: str
    type: str
    versions: tuple[int, int] | None
    nullable: tuple[int, int] | None
    tag: int | None
    tagged: tuple[int, int] | None
    ignorable: bool
    default_raw: object
    flexible_override: tuple[int, int] | None | str  # "inherit" when not set
    about: str
    elem: str | None = None          # element type of an array
    struct: str | None = None        # struct name (field or array element)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")


@dataclass
class StructDef:
    name: str
    fields: list[FieldDef]
    path: list[str] = field(default_factory=list)  # enclosing struct names, outermost first


@dataclass
class MessageDef:
    name: str
    kind: str
    api_key: int | None
    valid: tuple[int, int]
    flexible: tuple[int, int] | None
    latest_unstable: bool
    root: StructDef
    structs: dict[str, StructDef]
    source: str
    listeners: tuple[str, ...] = ()
    client_max: int | None = None    # highest version the client negotiates (API messages)


def load_message(path: str) -> MessageDef:
    with open(path, encoding="utf-8") as fh:
        doc = json.loads(strip_comments(fh.read()))
    structs: dict[str, StructDef] = {}

    def make_fields(raw_fields: list[dict], path_names: list[str]) -> list[FieldDef]:
        result = []
        for raw in raw_fields:
            ftype = raw["type"]
            base = ftype[2:] if ftype.startswith("[]") else ftype
            fd = FieldDef(
                name=raw["name"],
                attr=snake(raw["name"]),
                type=ftype,
                versions=parse_versions(raw.get("versions")),
                nullable=parse_versions(raw.get("nullableVersions")),
                tag=int(raw["tag"]) if "tag" in raw else None,
                tagged=parse_versions(raw.get("taggedVersions")),
                ignorable=bool(raw.get("ignorable", False)),
                default_raw=raw.get("default"),
                flexible_override=(parse_versions(raw["flexibleVersions"])
                                   if "flexibleVersions" in raw else "inherit"),
                about=raw.get("about", ""),
            )
            if ftype.startswith("[]"):
                fd.elem = base
            if base not in PRIMITIVES:
                fd.struct = base
                if "fields" in raw:
                    if base in structs:
                        raise ValueError(f"{path}: struct {base} defined twice")
                    sd = StructDef(base, [], path_names[:])
                    structs[base] = sd
                    sd.fields = make_fields(raw["fields"], path_names + [base])
            result.append(fd)
        return result

    name = doc["name"]
    for cs in doc.get("commonStructs", []):
        sd = StructDef(cs["name"], [], [name])
        structs[cs["name"]] = sd
    for cs in doc.get("commonStructs", []):
        structs[cs["name"]].fields = make_fields(cs["fields"], [name, cs["name"]])
    root = StructDef(name, [], [])
    root.fields = make_fields(doc.get("fields", []), [name])
    for sd in [root, *structs.values()]:
        for f in sd.fields:
            if f.struct and f.struct not in structs:
                raise ValueError(f"{path}: unknown struct type {f.struct}")
    valid = parse_versions(doc["validVersions"])
    return MessageDef(
        name=name,
        kind=doc["type"],
        api_key=doc.get("apiKey"),
        valid=valid,
        flexible=parse_versions(doc.get("flexibleVersions", "none")),
        latest_unstable=bool(doc.get("latestVersionUnstable", False)),
        root=root,
        structs=structs,
        source=os.path.basename(path),
        listeners=tuple(doc.get("listeners") or ()),
    )


# ---------------------------------------------------------------- defaults

def default_value(f: FieldDef, structs: dict[str, StructDef]) -> tuple[str, bool]:
    """Python expression of the field's default, and whether it is a mutable factory."""
    raw = f.default_raw
    t = f.type
    if f.is_array:
        if raw == "null":
            return "None", False
        return "[]", True
    if f.struct:
        if raw == "null":
            return "None", False
        return f"{f.struct}()", True
    if t == "bool":
        if raw is None:
            return "False", False
        if isinstance(raw, bool):
            return repr(raw), False
        return {"true": "True", "false": "False"}[str(raw).lower()], False
    if t in FIXED:
        if raw is None or raw == "":
            return ("0.0" if t == "float64" else "0"), False
        if t == "float64":
            return repr(float(raw)), False
        text = str(raw).strip()
        neg = text.startswith("-")
        body = text[1:] if neg else text
        value = int(body, 16) if body.lower().startswith("0x") else int(body, 10)
        return repr(-value if neg else value), False
    if t == "uuid":
        return "ZERO_UUID", False
    if t == "string":
        if raw == "null":
            return "None", False
        return repr("" if raw is None else str(raw)), False
    if t == "bytes":
        return ("None" if raw == "null" else "b''"), False
    if t == "records":
        return "None", False
    raise ValueError(f"no default for {f.name}: {t}")


# ---------------------------------------------------------------- per-version layouts

def field_flexible(msg: MessageDef, f: FieldDef, v: int) -> bool:
    if f.flexible_override != "inherit":
        return within(f.flexible_override, v)  # type: ignore[arg-type]
    return within(msg.flexible, v)


class Planner:
    """Computes per-(struct, version) wire layouts and shares identical ones."""

    def __init__(self, msg: MessageDef) -> None:
        self.msg = msg
        self.layouts: dict[tuple, str] = {}       # layout key -> function id
        self.order: list[tuple[str, str, list, list[int]]] = []  # (fid, struct, items, versions)
        self.by_id: dict[str, tuple] = {}

    def plan(self, sd: StructDef, v: int) -> str:
        items = self.items(sd, v)
        key = (sd.name, _freeze(items))
        fid = self.layouts.get(key)
        if fid is None:
            fid = f"{sd.name}_v{v}"
            self.layouts[key] = fid
            entry = (fid, sd.name, items, [v])
            self.order.append(entry)
            self.by_id[fid] = entry
        else:
            versions = self.by_id[fid][3]
            if v not in versions:
                versions.append(v)
        return fid

    def value_kind(self, f: FieldDef, v: int, tagged: bool) -> tuple:
        flex = tagged or field_flexible(self.msg, f, v)
        nullable = within(f.nullable, v)
        if f.is_array:
            et = f.elem
            if et in FIXED:
                elem = ("fixed", et)
            elif et == "uuid":
                elem = ("uuid",)
            elif et in ("string", "bytes"):
                elem = (et, flex, False)
            else:
                elem = ("struct", self.plan(self.msg.structs[et], v))
            return ("array", flex, nullable, elem)
        if f.struct:
            return ("struct", self.plan(self.msg.structs[f.struct], v), nullable)
        if f.type in FIXED:
            return ("fixed", f.type)
        if f.type == "uuid":
            return ("uuid",)
        return (f.type, flex, nullable)

    def items(self, sd: StructDef, v: int) -> list:
        items: list = []
        tags: list = []
        run: list = []
        absent: list = []

        def flush():
            if run:
                items.append(("fixed", tuple(run)))
                run.clear()

        flexible = within(self.msg.flexible, v)
        for f in sd.fields:
            present = within(f.versions, v)
            if present and within(f.tagged, v):
                if not flexible:
                    raise ValueError(f"{self.msg.name}.{f.name}: tagged in non-flexible v{v}")
                tags.append((f.tag, f.attr, f.name, self.value_kind(f, v, True)))
                continue
            if not present:
                if not f.ignorable:
                    absent.append(("absent", f.attr, f.name))
                continue
            kind = self.value_kind(f, v, False)
            if kind[0] == "fixed":
                run.append((f.attr, FIXED[f.type][0]))
                continue
            flush()
            items.append(("field", f.attr, f.name, kind))
        flush()
        if flexible:
            items.append(("tags", tuple(sorted(tags))))
        return absent + items


def _freeze(obj):
    if isinstance(obj, list):
        return tuple(_freeze(x) for x in obj)
    if isinstance(obj, tuple):
        return tuple(_freeze(x) for x in obj)
    return obj


# ---------------------------------------------------------------- code emission

class Emitter:
    """Collects generated lines and which struct field each line reads or writes."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.where: dict[int, str] = {}

    def add(self, line: str = "", where: str | None = None) -> None:
        self.lines.append(line)
        if where is not None:
            self.where[len(self.lines)] = where

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


VARIANT = {
    (False, False): "", (False, True): "nullable_",
    (True, False): "compact_", (True, True): "compact_nullable_",
}


class ModuleWriter:
    def __init__(self, msg: MessageDef) -> None:
        self.msg = msg
        self.planner = Planner(msg)
        self.helpers: set[str] = set()
        self.formats: set[str] = set()
        self.fixed_elems: set[str] = set()
        self.extra_defs: list[list[str]] = []
        self.extra_names: set[str] = set()
        self.defaults: dict[str, dict[str, tuple[str, bool]]] = {}

    # -- naming helpers
    def helper(self, name: str) -> str:
        self.helpers.add(name)
        return name

    def fixed_elem(self, t: str) -> str:
        self.fixed_elems.add(t)
        return f"_{t.upper()}"

    def reader(self, kind: tuple) -> str:
        """Expression of a reader function ``(mv, pos) -> (value, pos)`` for a value kind."""
        k = kind[0]
        if k == "fixed":
            code = FIXED[kind[1]][0]
            self.formats.add(code)
            name = f"_read_{kind[1]}"
            if name not in self.extra_names:
                self.extra_names.add(name)
                size = FIXED[kind[1]][1]
                self.extra_defs.append([
                    f"def {name}(mv, pos):",
                    f"    return _u_{ident(code)}(mv, pos)[0], pos + {size}",
                ])
            return name
        if k == "uuid":
            return self.helper("read_uuid")
        if k in VARIABLE:
            return self.helper(f"read_{VARIANT[(kind[1], kind[2])]}{k}")
        if k == "struct":
            if kind[2]:
                return self.wrapper("read", kind)
            return f"_dec_{kind[1]}"
        if k == "array":
            return self.wrapper("read", kind)
        raise ValueError(kind)

    def writer(self, kind: tuple) -> str:
        """Expression of a writer function ``(out, blobs, value)`` for a value kind."""
        k = kind[0]
        if k == "fixed":
            code = FIXED[kind[1]][0]
            self.formats.add(code)
            name = f"_write_{kind[1]}"
            if name not in self.extra_names:
                self.extra_names.add(name)
                self.extra_defs.append([
                    f"def {name}(out, blobs, value):",
                    f"    out += _p_{ident(code)}(value)",
                ])
            return name
        if k == "uuid":
            return self.helper("write_uuid")
        if k in VARIABLE:
            return self.helper(f"write_{VARIANT[(kind[1], kind[2])]}{k}")
        if k == "struct":
            if kind[2]:
                return self.wrapper("write", kind)
            return f"_enc_{kind[1]}"
        if k == "array":
            return self.wrapper("write", kind)
        raise ValueError(kind)

    def elem(self, elem: tuple, direction: str) -> str:
        if elem[0] == "fixed":
            return self.fixed_elem(elem[1])
        if elem[0] == "struct":
            return f"_{'dec' if direction == 'read' else 'enc'}_{elem[1]}"
        if elem[0] == "uuid":
            return self.helper(f"{direction}_uuid")
        return self.helper(f"{direction}_{VARIANT[(elem[1], False)]}{elem[0]}")

    def read_call(self, kind: tuple) -> str:
        """Expression reading a value of ``kind`` at ``pos`` into ``(value, pos)``."""
        k = kind[0]
        if k == "array":
            _, flex, nullable, elem = kind
            fn = self.helper(f"read_{VARIANT[(flex, nullable)]}array")
            return f"{fn}(mv, pos, {self.elem(elem, 'read')})"
        if k == "struct" and kind[2]:
            fn = self.helper("read_nullable_struct")
            return f"{fn}(mv, pos, _dec_{kind[1]})"
        return f"{self.reader(kind)}(mv, pos)"

    def write_call(self, kind: tuple, value: str) -> str:
        k = kind[0]
        if k == "array":
            _, flex, nullable, elem = kind
            fn = self.helper(f"write_{VARIANT[(flex, nullable)]}array")
            return f"{fn}(out, blobs, {value}, {self.elem(elem, 'write')})"
        if k == "struct" and kind[2]:
            fn = self.helper("write_nullable_struct")
            return f"{fn}(out, blobs, {value}, _enc_{kind[1]})"
        if k == "uuid":
            return f"out += {value}.bytes"
        return f"{self.writer(kind)}(out, blobs, {value})"

    def wrapper(self, direction: str, kind: tuple) -> str:
        """A named one-line function for a composite kind used as a tagged field."""
        if kind[0] == "array":
            _, flex, nullable, elem = kind
            what = elem[1] if elem[0] in ("struct", "fixed") else elem[0]
            name = f"_{direction}_{VARIANT[(flex, nullable)]}array_of_{what}"
        else:
            name = f"_{direction}_nullable_{kind[1]}"
        if name not in self.extra_names:
            self.extra_names.add(name)
            if direction == "read":
                body = f"    return {self.read_call(kind)}"
                self.extra_defs.append([f"def {name}(mv, pos):", body])
            else:
                body = f"    {self.write_call(kind, 'value')}"
                self.extra_defs.append([f"def {name}(out, blobs, value):", body])
        return name

    # -- struct classes
    def struct_order(self) -> list[StructDef]:
        """Structs leaves first, so every class exists before a class that refers to it."""
        done: list[str] = []
        seen: set[str] = set()

        def visit(sd: StructDef) -> None:
            if sd.name in seen:
                return
            seen.add(sd.name)
            for f in sd.fields:
                if f.struct:
                    visit(self.msg.structs[f.struct])
            done.append(sd.name)

        for sd in self.msg.structs.values():
            visit(sd)
        return [self.msg.structs[n] for n in done]

    def emit_class(self, em: Emitter, sd: StructDef, top: bool) -> None:
        msg = self.msg
        base = "Message" if top else "Struct"
        em.add(f"class {sd.name}({base}):")
        doc = self.docstring(sd, top)
        em.add('    """' + doc[0])
        for line in doc[1:]:
            em.add(("    " + line) if line else "")
        em.add('    """')
        em.add("")
        if not top:
            em.add(f"    __qualname__ = {'.'.join(sd.path + [sd.name])!r}")
        attrs = [f.attr for f in sd.fields]
        em.add(f"    __slots__ = {tuple(attrs)!r}")
        if top:
            em.add(f"    NAME = {msg.name!r}")
            em.add(f"    API_KEY = {msg.api_key!r}")
            em.add(f"    MIN_VERSION = {msg.valid[0]}")
            em.add(f"    MAX_VERSION = {msg.valid[1]}")
            flex_min = msg.flexible[0] if msg.flexible else None
            em.add(f"    FLEXIBLE_MIN = {flex_min!r}")
            em.add(f"    LATEST_VERSION_UNSTABLE = {msg.latest_unstable!r}")
        children = [n for n, s in msg.structs.items()
                    if s.path == sd.path + [sd.name] or (top and s.path == [msg.name])]
        if top:
            children = list(msg.structs)  # every struct is reachable from the message class
        for child in children:
            em.add(f"    {child} = {child}")
        em.add("    FIELDS = (")
        for f in sd.fields:
            em.add(f"        {self.field_meta(f)},")
        em.add("    )")
        consts = {}
        factories = {}
        for f in sd.fields:
            expr, mutable = default_value(f, msg.structs)
            if mutable:
                factories[f.attr] = "list" if expr == "[]" else expr[:-2]
            else:
                consts[f.attr] = expr
        consts["unknown_tagged_fields"] = "None"
        em.add("    _DEFAULTS = {" + ", ".join(f"{k!r}: {v}" for k, v in consts.items()) + "}")
        em.add("    _FACTORIES = {" + ", ".join(f"{k!r}: {v}" for k, v in factories.items()) + "}")
        em.add("")
        params = []
        body = []
        for f in sd.fields:
            expr, mutable = default_value(f, msg.structs)
            if mutable:
                params.append(f"{f.attr}=DEFAULT")
                body.append(f"        self.{f.attr} = {expr} if {f.attr} is DEFAULT else {f.attr}")
            else:
                params.append(f"{f.attr}={expr}")
                body.append(f"        self.{f.attr} = {f.attr}")
        if params:
            em.add("    def __init__(self, *, " + ", ".join(params) + "):")
        else:
            em.add("    def __init__(self):")
        for line in body:
            em.add(line)
        em.add("        self.unknown_tagged_fields = None")
        em.add("")
        em.add("")

    def field_meta(self, f: FieldDef) -> str:
        expr, mutable = default_value(f, self.msg.structs)
        default = ("list" if expr == "[]" else expr[:-2]) if mutable else expr
        return (f"Field({f.attr!r}, {f.name!r}, {f.type!r}, {f.versions!r}, {f.nullable!r}, "
                f"{f.tag!r}, {f.tagged!r}, {f.ignorable!r}, {default}, {f.struct or 'None'})")

    def docstring(self, sd: StructDef, top: bool) -> list[str]:
        msg = self.msg
        lines = []
        if top:
            what = {"request": "request", "response": "response", "header": "header",
                    "data": "data"}[msg.kind]
            key = f" (API key {msg.api_key})" if msg.api_key is not None else ""
            lines.append(f"Kafka {msg.name} {what}{key}, versions {msg.valid[0]}-{msg.valid[1]}.")
        else:
            lines.append(f"{sd.name}, part of {msg.name}.")
        lines.append("")
        lines.append("Fields:")
        for f in sd.fields:
            spec = f"v{f.versions[0]}+" if f.versions and f.versions[1] == OPEN else (
                f"v{f.versions[0]}-{f.versions[1]}" if f.versions else "no versions")
            extra = []
            if f.nullable:
                extra.append(f"nullable v{f.nullable[0]}+")
            if f.tag is not None:
                extra.append(f"tag {f.tag}")
            about = f.about.replace('"""', "'''").replace("\\", "\\\\")
            text = f"    {f.attr} ({f.type}, {spec}{', ' if extra else ''}{', '.join(extra)})"
            lines.append(text)
            if about:
                lines.append(f"        {about}")
        return lines

    # -- codec functions
    def emit_decoder(self, em: Emitter, fid: str, sname: str, items: list, versions) -> None:
        em.add(f"def _dec_{fid}(mv, pos):")
        em.add(f'    """{sname}, {_ranges(versions)}."""')
        em.add(f"    o = new({sname})")
        for item in items:
            if item[0] == "fixed":
                run = item[1]
                code = "".join(c for _, c in run)
                self.formats.add(code)
                size = sum(_size(c) for c in code)
                targets = ", ".join(f"o.{a}" for a, _ in run)
                if len(run) == 1:
                    targets += ","
                where = f"{sname}." + ", ".join(a for a, _ in run)
                em.add(f"    {targets} = _u_{ident(code)}(mv, pos)", where)
                em.add(f"    pos += {size}")
            elif item[0] == "field":
                _, attr, _name, kind = item
                em.add(f"    o.{attr}, pos = {self.read_call(kind)}", f"{sname}.{attr}")
            elif item[0] == "tags":
                table = self.tag_table(fid, item[1], "read")
                em.add("    if mv[pos]:", f"{sname}.<tagged fields>")
                em.add(f"        pos = {self.helper('read_tags')}(mv, pos, o, {table})",
                       f"{sname}.<tagged fields>")
                em.add("    else:")
                em.add("        pos += 1")
        em.add("    return o, pos")
        em.add("")
        em.add("")

    def emit_encoder(self, em: Emitter, fid: str, sname: str, items: list, versions) -> None:
        em.add(f"def _enc_{fid}(out, blobs, o):")
        em.add(f'    """{sname}, {_ranges(versions)}."""')
        sd = self.msg.structs.get(sname) or self.msg.root
        fields = {f.attr: f for f in sd.fields}
        for item in items:
            if item[0] == "fixed":
                run = item[1]
                code = "".join(c for _, c in run)
                self.formats.add(code)
                args = ", ".join(f"o.{a}" for a, _ in run)
                em.add(f"    out += _p_{ident(code)}({args})", f"{sname}." + ", ".join(a for a, _ in run))
            elif item[0] == "field":
                _, attr, _name, kind = item
                em.add(f"    {self.write_call(kind, 'o.' + attr)}", f"{sname}.{attr}")
            elif item[0] == "absent":
                _, attr, _name = item
                f = fields[attr]
                expr, _ = default_value(f, self.msg.structs)
                lo_hi = f"{f.versions[0]}+" if f.versions and f.versions[1] == OPEN else (
                    f"{f.versions[0]}-{f.versions[1]}" if f.versions else "none")
                em.add(f"    if o.{attr} != {expr}:", f"{sname}.{attr}")
                em.add(f"        raise WireError('not sendable: the field exists only in versions "
                       f"{lo_hi} and is not ignorable')", f"{sname}.{attr}")
            elif item[0] == "tags":
                if item[1]:
                    table = self.tag_table(fid, item[1], "write")
                    em.add(f"    {self.helper('write_tags')}(out, blobs, o, {table})",
                           f"{sname}.<tagged fields>")
                else:
                    em.add("    if o.unknown_tagged_fields:")
                    em.add(f"        {self.helper('write_tags')}(out, blobs, o, ())",
                           f"{sname}.<tagged fields>")
                    em.add("    else:")
                    em.add("        out.append(0)")
        em.add("")
        em.add("")

    def tag_table(self, fid: str, tags: tuple, direction: str) -> str:
        if not tags:
            return "None"
        name = f"_{'READ' if direction == 'read' else 'WRITE'}_TAGS_{fid}"
        if name in self.extra_names:
            return name
        self.extra_names.add(name)
        sname = fid.rsplit("_v", 1)[0]
        sd = self.msg.structs.get(sname) or self.msg.root
        fields = {f.attr: f for f in sd.fields}
        if direction == "read":
            entries = ", ".join(f"{tag}: ({attr!r}, {self.reader(kind)})"
                                for tag, attr, _n, kind in tags)
            self.tag_defs.append(f"{name} = {{{entries}}}")
        else:
            parts = []
            for tag, attr, _n, kind in tags:
                expr, _ = default_value(fields[attr], self.msg.structs)
                parts.append(f"({tag}, {attr!r}, {expr}, {self.writer(kind)})")
            # Annotated: a default such as ``[]`` leaves a type checker nothing to infer.
            self.tag_defs.append(f"{name}: tuple = ({', '.join(parts)},)")
        return name

    def render(self) -> tuple[str, str]:
        msg = self.msg
        self.tag_defs: list[str] = []
        versions = range(msg.valid[0], msg.valid[1] + 1)
        top_ids = [self.planner.plan(msg.root, v) for v in versions]

        codec = Emitter()
        for fid, sname, items, vs in self.planner.order:
            self.emit_decoder(codec, fid, sname, items, vs)
            self.emit_encoder(codec, fid, sname, items, vs)

        classes = Emitter()
        for sd in self.struct_order():
            self.emit_class(classes, sd, top=False)
        self.emit_class(classes, msg.root, top=True)

        head = [
            f"# Generated by tools/gen_protocol.py from {msg.source}. Do not edit.",
            f'"""{msg.name}: classes and per-version codecs."""',
            "",
            "from struct import Struct as _S",
            "",
            "from kafka_fast.protocol.base import DEFAULT, Field, Message, Struct, new",
            "from kafka_fast.protocol.primitives import (",
        ]
        names = sorted(self.helpers | {"WireError", "ZERO_UUID"} |
                       ({"Fixed"} if self.fixed_elems else set()))
        for n in names:
            head.append(f"    {n},")
        head.append(")")
        head.append("")
        for code in sorted(self.formats):
            name = ident(code)
            head.append(f"_s_{name} = _S('>{code}')")
            head.append(f"_u_{name} = _s_{name}.unpack_from")
            head.append(f"_p_{name} = _s_{name}.pack")
        for t in sorted(self.fixed_elems):
            code, size = FIXED[t]
            head.append(f"_{t.upper()} = Fixed({code!r}, {size})")
        head.append("")
        head.append("")
        body = Emitter()
        for line in head:
            body.add(line)
        for line in classes.lines:
            body.add(line)
        offset = len(body.lines)
        for i, line in enumerate(codec.lines, 1):
            body.add(line, codec.where.get(i))
        del offset
        for d in self.extra_defs:
            for line in d:
                body.add(line)
            body.add("")
            body.add("")
        for line in self.tag_defs:
            body.add(line)
        if self.tag_defs:
            body.add("")
        lo = msg.valid[0]
        pad = ["None"] * lo
        dec = pad + [f"_dec_{fid}" for fid in top_ids]
        enc = pad + [f"_enc_{fid}" for fid in top_ids]
        body.add(f"{msg.name}._DECODERS = (" + ", ".join(dec) + ",)")
        body.add(f"{msg.name}._ENCODERS = (" + ", ".join(enc) + ",)")
        body.add("")
        body.add("# Line -> field, used to name the field in codec error messages.")
        body.add("_WHERE = {")
        for ln, w in sorted(body.where.items()):
            body.add(f"    {ln}: {w!r},")
        body.add("}")
        return module_name(msg.name), body.text()


def ident(code: str) -> str:
    """A struct format as part of an identifier ('?' (bool) becomes 'x', unused otherwise)."""
    return code.replace("?", "x")


def _size(code: str) -> int:
    return {"?": 1, "b": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "d": 8}[code]


def _ranges(versions) -> str:
    vs = sorted(versions)
    out = []
    start = prev = vs[0]
    for v in vs[1:]:
        if v == prev + 1:
            prev = v
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = v
    out.append(f"{start}" if start == prev else f"{start}-{prev}")
    word = "version" if len(vs) == 1 else "versions"
    return f"{word} {', '.join(out)}"


def module_name(name: str) -> str:
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2",
                  re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)).lower()


# ---------------------------------------------------------------- the package index

def render_index(messages: list[MessageDef], source: str = "") -> str:
    lines = ["# Generated by tools/gen_protocol.py. Do not edit."]
    if source:
        lines += textwrap.wrap(f"Schemas: {source}", 96, initial_indent="# ",
                               subsequent_indent="# ")
    lines += [
        '"""Every client-facing Kafka message class; each module is imported on first use."""',
        "",
        "import importlib",
        "",
        "#: class name -> module in this package",
        "MODULES = {",
    ]
    for m in sorted(messages, key=lambda m: m.name):
        lines.append(f"    {m.name!r}: {module_name(m.name)!r},")
    lines.append("}")
    lines.append("")
    lines.append("#: API key -> (request class name, response class name, request flexible min,")
    lines.append("#: response flexible min, min version, max version the codec speaks, max version")
    lines.append("#: the client negotiates)")
    lines.append("API_INDEX = {")
    by_key: dict[int, dict[str, MessageDef]] = {}
    for m in messages:
        if m.api_key is not None:
            by_key.setdefault(m.api_key, {})[m.kind] = m
    for key in sorted(by_key):
        pair = by_key[key]
        if set(pair) != {"request", "response"}:
            names = ", ".join(m.name for m in pair.values())
            raise ValueError(f"API key {key} needs one request and one response schema: {names}")
        req, resp = pair["request"], pair["response"]
        rf = req.flexible[0] if req.flexible else None
        sf = resp.flexible[0] if resp.flexible else None
        if req.valid != resp.valid:
            raise ValueError(f"API key {key}: {req.name} and {resp.name} differ in versions")
        lines.append(f"    {key}: ({req.name!r}, {resp.name!r}, {rf!r}, {sf!r}, "
                     f"{req.valid[0]}, {req.valid[1]}, {req.client_max}),")
    lines.append("}")
    lines.append("")
    lines.append("__all__ = sorted(MODULES)")
    lines.append("")
    lines.append("")
    lines.append("def __getattr__(name):")
    lines.append("    module = MODULES.get(name)")
    lines.append("    if module is None:")
    lines.append("        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')")
    lines.append("    cls = getattr(importlib.import_module(f'{__name__}.{module}'), name)")
    lines.append("    globals()[name] = cls")
    lines.append("    return cls")
    lines.append("")
    lines.append("")
    lines.append("def __dir__():")
    lines.append("    return sorted(set(globals()) | set(MODULES))")
    return "\n".join(lines) + "\n"


def api_name(msg: MessageDef) -> str:
    """The API a request or response schema belongs to: 'FetchRequest' -> 'Fetch'."""
    return re.sub(r"(Request|Response)$", "", msg.name)


def client_messages(messages: list[MessageDef], apis: dict[str, dict[str, int]],
                    data: tuple[str, ...]) -> list[MessageDef]:
    """The messages of the listed APIs and data schemas; every listed name must exist, and
    each listed API needs one request and one response schema."""
    caps = {name: cap for domain in apis.values() for name, cap in domain.items()}
    chosen = [m for m in messages
              if (m.api_key is not None and api_name(m) in caps) or m.name in data]
    found_apis = {api_name(m) for m in chosen if m.api_key is not None}
    found_data = {m.name for m in chosen if m.api_key is None}
    missing = sorted(set(caps) - found_apis) + sorted(set(data) - found_data)
    if missing:
        raise ValueError(f"listed but not in the schema folder: {', '.join(missing)}")
    for m in chosen:
        if m.api_key is not None:
            m.client_max = caps[api_name(m)]
    return chosen


def check_client_versions(messages: list[MessageDef]) -> None:
    """Each API's client version is one the codec speaks."""
    for m in messages:
        if m.client_max is not None and not m.valid[0] <= m.client_max <= m.valid[1]:
            raise ValueError(f"{m.name}: client version {m.client_max} outside the codec's "
                             f"{m.valid[0]}-{m.valid[1]}")


def schema_version(schema_dir: str) -> str:
    """First line of the VERSION file beside the schema folder ('' when there is none)."""
    path = os.path.join(os.path.dirname(os.path.abspath(schema_dir)), "VERSION")
    if not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8") as fh:
        return " ".join(fh.read().split())


def generate(schema_dir: str, apis: dict[str, dict[str, int]] | None = None,
             data: tuple[str, ...] | None = None) -> dict[str, str]:
    """Return {file name: text} for the whole messages package."""
    apis = CLIENT_APIS if apis is None else apis
    data = CLIENT_DATA if data is None else data
    messages = []
    for fn in sorted(os.listdir(schema_dir)):
        if fn.endswith(".json"):
            messages.append(load_message(os.path.join(schema_dir, fn)))
    messages = client_messages(messages, apis, data)
    check_client_versions(messages)
    files = {}
    for msg in messages:
        mod, text = ModuleWriter(msg).render()
        files[f"{mod}.py"] = text
    files["__init__.py"] = render_index(messages, schema_version(schema_dir))
    return files


def write(files: dict[str, str], out_dir: str) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for fn in os.listdir(out_dir):
        if fn.endswith(".py") and fn not in files:
            os.remove(os.path.join(out_dir, fn))
    for fn, text in files.items():
        path = os.path.join(out_dir, fn)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


def main(argv: list[str]) -> int:
    args = list(argv[1:])
    options: dict[str, str] = {}
    for flag in ("--apis",):
        if flag in args:
            i = args.index(flag)
            if i + 1 >= len(args):
                print(f"{flag} needs a value", file=sys.stderr)
                return 2
            options[flag] = args[i + 1]
            del args[i:i + 2]
    schema_dir = args[0] if args else DEFAULT_SCHEMAS
    out_dir = args[1] if len(args) > 1 else DEFAULT_OUT
    if not os.path.isdir(schema_dir):
        print(f"schema folder not found: {schema_dir}", file=sys.stderr)
        return 2
    tables: dict = {}
    if "--apis" in options:
        with open(options["--apis"], encoding="utf-8") as fh:
            given = json.load(fh)
        tables = {"apis": given.get("apis", {}), "data": tuple(given.get("data", ()))}
    try:
        files = generate(schema_dir, **tables)
    except ValueError as exc:
        print(f"gen_protocol: {exc}", file=sys.stderr)
        return 1
    write(files, out_dir)
    print(f"wrote {len(files)} files to {os.path.relpath(out_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
