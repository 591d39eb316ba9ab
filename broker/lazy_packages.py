"""Import a package's submodules without running the package's `__init__` until someone needs it.

Why: kafka-python's `__init__` imports its whole client (KafkaAdminClient, KafkaConsumer,
KafkaProducer and their networking, about 100 ms), while the broker only needs `kafka.protocol`'s
message classes; crc32c's `__init__` looks its own version up in the installed distributions
(`importlib.metadata`, 30-200 ms on a busy machine), while records/ and storage/ need only its extension
module `crc32c._crc32c`. Start-up has a 0.3 s budget (issue 7), so `python -m broker` installs stand-ins
before anything imports either.

A stand-in has the real `__path__`, so `import kafka.protocol.x` finds its submodules as usual.
The first attribute lookup it cannot answer (`from kafka import KafkaConsumer`) runs the real
`__init__` into it, so the package stays fully usable in the same process.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any


class _LazyPackage(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or self.__dict__.get("_lazy_initialised"):
            raise AttributeError(name)
        self._lazy_initialised = True
        spec = self.__spec__
        assert spec is not None and spec.loader is not None  # set by install()
        spec.loader.exec_module(self)
        return getattr(self, name)


def install(*names: str) -> None:
    """Stand-ins for top-level packages `names` that nobody has imported yet."""
    for name in names:
        if name in sys.modules:
            continue
        spec = importlib.util.find_spec(name)  # finds the package without executing it
        if spec is None or spec.submodule_search_locations is None:
            continue  # not installed, or not a package: the ordinary import reports it later
        module = _LazyPackage(name)
        module.__spec__ = spec
        module.__path__ = list(spec.submodule_search_locations)
        module.__file__ = spec.origin
        module.__package__ = name
        sys.modules[name] = module
