"""Producer id allocation for InitProducerId (Kafka's ProducerIdManager).

Ids are handed out from blocks of `BLOCK_SIZE`; the end of the current block is persisted (atomically,
fsynced) before any id from it is used, so a restart never hands out an id twice. In cluster mode the
block would come from the metadata store (Kafka: /latest_producer_id_block); the embedded default keeps
it in a file in the first log directory.
"""

from __future__ import annotations

import os
from pathlib import Path

BLOCK_SIZE = 1000


class ProducerIdManager:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._next = 0
        self._block_end = 0
        try:
            self._block_end = int(path.read_text().strip() or 0)
        except FileNotFoundError:
            self._block_end = 0
        except ValueError:
            raise ValueError(f"{path}: not a producer id block end") from None
        self._next = self._block_end

    def generate(self) -> int:
        if self._next >= self._block_end:
            self._persist(self._block_end + BLOCK_SIZE)
        pid = self._next
        self._next += 1
        return pid

    def _persist(self, block_end: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(f"{block_end}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._block_end = block_end
