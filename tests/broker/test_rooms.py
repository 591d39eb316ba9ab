"""The rooms of broker/ and the directions their imports may take (docs/architecture.md, "Rooms and directions").

A room is a package of broker/ (broker/coordinator/group/, share/ and transaction/ and broker/metadata/store/ are
rooms of their own) or, for the entry points, broker/ itself. Every import counts: at module level, inside a
function, under TYPE_CHECKING, since each is coupling all the same. A room may import the rooms of lower layers,
and in its own layer only the pairs `SAME_LAYER` names. Where a lower room must call up, it defines a small
`typing.Protocol` that the room above implements (`test_the_protocols_are_implemented` keeps those honest).
Below broker/, `records`, `protocol` and `storage` import nothing of it.

A new package of broker/ or a new module directly in broker/ fails here until it is given its place: a row in
`LAYERS` (and in docs/architecture.md) or `ENTRY_POINTS`.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parents[2]

# Lowest first. A room imports only rooms of lower layers (and the SAME_LAYER pairs).
LAYERS: dict[str, int] = {
    "broker.common": 0,  # KafkaApiError, MetadataVersion
    "broker.metrics": 0,  # Kafka's metrics, the Prometheus endpoint, KIP-714 client metrics
    "broker.metadata": 0,  # the metadata store's model, znodes, the metadata cache
    "broker.metadata.store": 0,  # the metadata store (ZooKeeper or local)
    "broker.config": 1,  # static and dynamic configs, key tables, topic and group configs
    "broker.security": 2,  # ACLs, authorizer, SASL mechanisms, SCRAM, TLS, quotas, client security
    "broker.network": 3,  # socket server, connections, TLS connections, the inter-broker client
    "broker.cluster": 4,  # Partition, its ISR half, Replica, replica selection
    "broker.coordinator": 4,  # the runtime every coordinator shares, PartitionWriter
    "broker.coordinator.share": 4,  # the share coordinator and the persister's contract
    "broker.coordinator.transaction": 4,  # the transaction coordinator
    "broker.coordinator.group": 4,  # the group coordinator (classic, KIP-848, share groups)
    "broker.server": 5,  # ReplicaManager, purgatory, delayed operations, fetchers, fetch sessions, log writes
    "broker.controller": 5,  # the ZooKeeper-mode controller and the admin managers
    "broker.share": 6,  # share-partition leaders (KIP-932)
    "broker.raft": 6,  # the Raft layer of __cluster_metadata
    "broker.kraft": 7,  # the KRaft broker: image, loader, publisher, lifecycle
    "broker.apis": 8,  # one module per API
    "broker.quorum": 9,  # the quorum controller (process.roles=controller) on the Raft layer
    "broker": 10,  # the entry points: KafkaServer, python -m broker, testing, the local cluster
}
SAME_LAYER: frozenset[tuple[str, str]] = frozenset({
    ("broker.metadata.store", "broker.metadata"),
    ("broker.coordinator.share", "broker.coordinator"),
    ("broker.coordinator.transaction", "broker.coordinator"),
    ("broker.coordinator.group", "broker.coordinator"),
    ("broker.coordinator.group", "broker.coordinator.share"),
})
ENTRY_POINTS = frozenset({"__init__", "__main__", "kafka_server", "lazy_packages", "local_cluster", "pytest_plugin",
                          "testing"})
BELOW_BROKER = ("records", "protocol", "storage")


def room_of(module: str) -> str | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return ".".join(parts[:n])
    return None


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module or module.name) of every import in the file, wherever it stands; relative ones resolved."""
    module = module_name(path, root)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                package = package[:len(package) - node.level + 1]
                base = ".".join(package + ([node.module] if node.module else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def wrong_imports(root: Path = ROOT) -> list[str]:
    out = []
    for path in sorted((root / "broker").rglob("*.py")):
        src = room_of(module_name(path, root))
        assert src is not None
        for line, target in imports(path, root):
            dst = room_of(target)
            if dst is None or dst == src or LAYERS[dst] < LAYERS[src] or (src, dst) in SAME_LAYER:
                continue
            out.append(f"{path.relative_to(root)}:{line} imports {target}: room {src} (layer {LAYERS[src]}) may not "
                       f"import room {dst} (layer {LAYERS[dst]}). Lower rooms never import higher ones; if {src} "
                       f"must call up, define a typing.Protocol in {src} and let {dst} implement it "
                       f"(docs/architecture.md, Rooms and directions)")
    return out


def test_every_import_goes_down_the_rooms() -> None:
    wrong = wrong_imports()
    assert not wrong, "\n".join(wrong)


def test_every_package_of_broker_is_a_room() -> None:
    packages = sorted(module_name(p.parent) for p in (ROOT / "broker").rglob("__init__.py"))
    unplaced = [p for p in packages if p not in LAYERS]
    assert not unplaced, f"packages without a room: {unplaced}; give each its layer in LAYERS and docs/architecture.md"


def test_only_the_entry_points_sit_directly_in_broker() -> None:
    direct = {p.stem for p in (ROOT / "broker").glob("*.py")}
    assert direct == ENTRY_POINTS, f"directly in broker/: {sorted(direct)}; the entry points: {sorted(ENTRY_POINTS)}"


def test_records_protocol_and_storage_import_nothing_of_broker() -> None:
    wrong = [f"{path.relative_to(ROOT)}:{line} imports {target}"
             for package in BELOW_BROKER for path in sorted((ROOT / package).rglob("*.py"))
             for line, target in imports(path) if target.split(".")[0] == "broker"]
    assert not wrong, "\n".join(wrong)


def test_a_wrong_import_is_refused(tmp_path: Path) -> None:
    """The check itself: a replica fetcher importing KafkaServer (a room calling up) is reported."""
    (tmp_path / "broker" / "server").mkdir(parents=True)
    for init in ("broker/__init__.py", "broker/server/__init__.py"):
        (tmp_path / init).write_text("")
    (tmp_path / "broker" / "server" / "fetcher.py").write_text(textwrap.dedent("""\
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from broker.kafka_server import KafkaServer
        """))
    [message] = wrong_imports(tmp_path)
    assert message.startswith("broker/server/fetcher.py:4 imports broker.kafka_server.KafkaServer: room broker.server "
                              "(layer 5) may not import room broker (layer 10)")


# ---------------------------------------------------------------- the protocols a lower room calls up through
# (protocol, the class that implements it): the class defines every member the protocol names.
IMPLEMENTED = [
    ("broker.apis.base.HandlerServer", "broker.kafka_server.KafkaServer"),
    ("broker.controller.client_metrics_configs.ClientMetricsServer", "broker.kafka_server.KafkaServer"),
    # HandlerServer extends these three for type checkers only (broker/apis/base.py): checked one by one.
    ("broker.controller.controller.ControllerServer", "broker.kafka_server.KafkaServer"),
    ("broker.controller.config_admin.ConfigAdminServer", "broker.kafka_server.KafkaServer"),
    ("broker.share.manager.ShareServer", "broker.kafka_server.KafkaServer"),
    ("broker.server.fetcher.FetcherServer", "broker.kafka_server.KafkaServer"),
    ("broker.config.dynamic.DynamicConfigServer", "broker.kafka_server.KafkaServer"),
    ("broker.coordinator.transaction.service.TransactionServer", "broker.kafka_server.KafkaServer"),
    ("broker.coordinator.group.service.GroupCoordinatorServer", "broker.kafka_server.KafkaServer"),
    ("broker.share.rpc_persister.RpcPersisterServer", "broker.kafka_server.KafkaServer"),
    ("broker.kraft.broker_server.KRaftServer", "broker.kafka_server.KafkaServer"),
    ("broker.coordinator.runtime.PartitionWriter", "broker.server.replica_manager.ReplicaManager"),
    ("broker.coordinator.runtime.CoordinatorPartition", "broker.cluster.partition.Partition"),
    ("broker.coordinator.transaction.producer_id_manager.ProducerIdManager",
     "broker.controller.producer_ids.FileProducerIdManager"),
]


def _load(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def protocol_members(proto: type) -> set[str]:
    members: set[str] = set()
    for cls in proto.__mro__:
        if cls in (object, Protocol) or not getattr(cls, "_is_protocol", False):
            continue
        members |= set(cls.__dict__.get("__annotations__", {}))
        members |= {n for n, v in cls.__dict__.items()
                    if not n.startswith("_") and (callable(v) or isinstance(v, property))}
    return members


def class_members(cls: type) -> set[str]:
    """What instances of `cls` have: class attributes and methods, and every `self.<name> = ...` in its code."""
    members = {n for klass in cls.__mro__ for n in vars(klass)}
    for klass in cls.__mro__:
        if klass is object:
            continue
        members |= set(getattr(klass, "__annotations__", {}))
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                if isinstance(node, ast.AnnAssign | ast.AugAssign) else []
            members |= {t.attr for t in targets
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    return members


def test_the_protocols_are_implemented() -> None:
    missing = {}
    for proto_name, impl_name in IMPLEMENTED:
        absent = protocol_members(_load(proto_name)) - class_members(_load(impl_name))
        if absent:
            missing[f"{proto_name} by {impl_name}"] = sorted(absent)
    assert not missing, missing
