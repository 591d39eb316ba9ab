"""Start brokers for tests, tools and benchmarks: in-process (a thread with its own event loop) or as a
`python -m broker` subprocess. Both listen on a free 127.0.0.1 port and keep data in a directory
(a fresh temporary one unless given).

    with EmbeddedBroker({"num.partitions": "3"}) as b:      # well under a second
        KafkaProducer(bootstrap_servers=b.bootstrap)
    with start_broker_process() as b:                        # a real process: kill -9 works on it
        ...
"""

from __future__ import annotations

import asyncio
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# Test-friendly defaults: no initial rebalance delay, one offsets partition set small, quick checks.
TEST_DEFAULTS = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "4",
    "offsets.topic.replication.factor": "1",
    "log.segment.delete.delay.ms": "1000",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _overrides(overrides: dict[str, str] | None, data_dir: Path, port: int) -> dict[str, str]:
    props = dict(TEST_DEFAULTS)
    props.update({"listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(data_dir)})
    props.update(overrides or {})
    return props


class EmbeddedBroker:
    """A broker running in a background thread of this process."""

    def __init__(self, overrides: dict[str, str] | None = None, *, data_dir: Path | None = None,
                 port: int | None = None) -> None:
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="broker-"))
        self.port = port or free_port()
        self.props = _overrides(overrides, self.data_dir, self.port)
        self.server: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> EmbeddedBroker:
        from broker.config.kafka_config import KafkaConfig
        from broker.kafka_server import KafkaServer

        config = KafkaConfig(self.props)
        ready = threading.Event()

        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self.server = KafkaServer(config)
            try:
                await self.server.start()
            except BaseException as e:
                self._error = e
                ready.set()
                await self.server.shutdown()
                return
            ready.set()
            await self._stop.wait()
            await self.server.shutdown()

        def run() -> None:
            import uvloop

            try:
                uvloop.run(main())
            except BaseException as e:  # surfaced to the starting thread
                self._error = e
                ready.set()

        self._thread = threading.Thread(target=run, name=f"broker-{self.port}", daemon=True)
        self._thread.start()
        if not ready.wait(timeout):
            raise TimeoutError("broker did not start in time")
        if self._error is not None:
            raise RuntimeError(f"broker failed to start: {self._error}") from self._error
        return self

    def call(self, fn: Any, *args: Any) -> Any:
        """Run fn(*args) on the broker's loop and return its result (for white-box checks in tests)."""
        assert self.loop is not None
        fut = asyncio.run_coroutine_threadsafe(_as_coro(fn, *args), self.loop)
        return fut.result(30)

    def stop(self) -> None:
        if self._thread is None:
            return
        if self.loop is not None and self._stop is not None and not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass
        self._thread.join(30)
        self._thread = None

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> EmbeddedBroker:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.cleanup()


async def _as_coro(fn: Any, *args: Any) -> Any:
    result = fn(*args)
    if asyncio.iscoroutine(result):
        result = await result
    return result


_LISTENING = re.compile(r"listening on [^ ]+:(\d+)")


class BrokerProcess:
    """`python -m broker` in a subprocess; its log goes to `<data_dir>/broker.log`."""

    def __init__(self, overrides: dict[str, str] | None = None, *, data_dir: Path | None = None,
                 port: int | None = None, config_file: Path | None = None,
                 file_size_limit: int | None = None, open_files_limit: int | None = None) -> None:
        self._own_dir = data_dir is None
        # RLIMIT_FSIZE for the broker process: a write past it fails with EFBIG, as on a full disk (Python
        # ignores SIGXFSZ, so the process lives on)
        self.file_size_limit = file_size_limit
        # RLIMIT_NOFILE for the broker process (hard and soft; raising the hard limit needs root)
        self.open_files_limit = open_files_limit
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="broker-"))
        self.port = port or free_port()
        self.props = _overrides(overrides, self.data_dir / "logs", self.port)
        self.config_file = config_file
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir / "broker.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(p) for p in self.props["log.dirs"].split(",")]

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        cmd = [sys.executable, "-m", "broker"]
        if self.config_file is not None:
            cmd += ["--config", str(self.config_file)]
        for k, v in self.props.items():
            cmd += ["--override", f"{k}={v}"]
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Only what this run appends to the log counts (a restart reuses the same log file).
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        logf = open(self.log_path, "ab")
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = subprocess.Popen(
            cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, cwd=str(Path(__file__).resolve().parent.parent),
            preexec_fn=self._limits if self.file_size_limit is not None or self.open_files_limit is not None else None)
        logf.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited with {self.proc.returncode}:\n{self.log_tail()}")
            with open(self.log_path, "rb") as f:
                f.seek(log_start)
                text = f.read().decode(errors="replace")
            if "started in" in text and self._answers():
                return self
            time.sleep(0.05)
        self.kill()
        raise TimeoutError(f"broker did not start in {timeout}s:\n{self.log_tail()}")

    def _limits(self) -> None:
        if self.file_size_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_size_limit, self.file_size_limit))
        if self.open_files_limit is not None:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files_limit, self.open_files_limit))
            except (ValueError, OSError):  # not root: as high as the hard limit allows
                hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                resource.setrlimit(resource.RLIMIT_NOFILE, (min(self.open_files_limit, hard), hard))

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def cleanup(self) -> None:
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.cleanup()


def start_broker_process(overrides: dict[str, str] | None = None, *, data_dir: Path | None = None,
                         port: int | None = None) -> BrokerProcess:
    return BrokerProcess(overrides, data_dir=data_dir, port=port).start()
