"""Start and stop a standalone Apache ZooKeeper server (Debian's `zookeeper` package) on loopback.

Contract:
- `start_zookeeper(data_dir)` writes `zoo.cfg` into `data_dir`, launches
  `java -cp <jars> org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg` listening on
  127.0.0.1 only (a free port unless one is given), and returns once the server answers `ruok`
  with `imok` and `srvr` reports a Mode (it then accepts sessions). On timeout the process is
  killed and `ZooKeeperStartError` raised.
- `ZooKeeperServer.stop()` terminates the process (SIGTERM, then SIGKILL after a grace period);
  `kill()` sends SIGKILL at once (a crashed coordination service). Both are idempotent. The server
  is a context manager.
- The default `tick_time_ms=200` lets sessions be as short as 2 ticks (0.4 s), which tests want;
  the maximum session timeout is raised to 60 s so a broker's `zookeeper.session.timeout.ms`
  (Kafka's default 18 s) is honoured rather than capped at ZooKeeper's default of 20 ticks.
- The classpath is the minimal set of jars ZooKeeper 3.8's server needs, found in /usr/share/java
  (override with the ZOOKEEPER_CLASSPATH environment variable); logging goes to slf4j-nop so the
  server writes nothing unless it fails to start, in which case its output is in `zookeeper.out`.

`python -m broker.metadata.zookeeper_server [--port N] [--data-dir DIR]` runs one in the foreground
for trying a local cluster by hand.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

JAVA_DIR = Path("/usr/share/java")

# ZooKeeper 3.8's server classes and their runtime dependencies; slf4j-nop keeps the log silent.
_REQUIRED_JARS = (
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "slf4j-api.jar",
    "slf4j-nop.jar",
    "netty-handler.jar",
    "netty-transport.jar",
    "netty-common.jar",
    "netty-buffer.jar",
    "netty-codec.jar",
    "netty-resolver.jar",
    "netty-transport-native-unix-common.jar",
    "netty-transport-native-epoll.jar",
    "commons-io.jar",
)
_OPTIONAL_JARS = ("audience-annotations.jar", "metrics-core.jar", "snappy-java.jar")


class ZooKeeperStartError(RuntimeError):
    """The ZooKeeper server could not be found or did not become ready."""


def zookeeper_classpath() -> str:
    """The Java classpath for the ZooKeeper server, from $ZOOKEEPER_CLASSPATH or /usr/share/java."""
    override = os.environ.get("ZOOKEEPER_CLASSPATH")
    if override:
        return override
    missing = [jar for jar in _REQUIRED_JARS if not (JAVA_DIR / jar).exists()]
    if missing:
        raise ZooKeeperStartError(
            f"ZooKeeper jars not found in {JAVA_DIR}: {', '.join(missing)} (apt-get install zookeeper)"
        )
    jars = [str(JAVA_DIR / jar) for jar in _REQUIRED_JARS]
    jars += [str(JAVA_DIR / jar) for jar in _OPTIONAL_JARS if (JAVA_DIR / jar).exists()]
    return os.pathsep.join(jars)


def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def four_letter_word(host: str, port: int, word: str, timeout: float = 1.0) -> str:
    """Send one of ZooKeeper's four-letter commands (ruok, srvr, stat, ...) and return the reply."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode("ascii"))
        chunks: list[bytes] = []
        total = 0
        while total < 1 << 20:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


class ZooKeeperServer:
    """A running standalone ZooKeeper process; see the module docstring."""

    def __init__(self, process: subprocess.Popen[bytes], host: str, port: int, data_dir: Path) -> None:
        self.process = process
        self.host = host
        self.port = port
        self.data_dir = data_dir

    @property
    def connect_string(self) -> str:
        """`zookeeper.connect` value for this server, e.g. "127.0.0.1:2181"."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def is_running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, wait up to `timeout` seconds, then SIGKILL."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        """SIGKILL now: the coordination service dies without closing sessions."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> ZooKeeperServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ZooKeeperServer({self.connect_string}, pid={self.pid}, data_dir={str(self.data_dir)!r})"


def write_config(data_dir: Path, port: int, tick_time_ms: int, host: str = "127.0.0.1") -> Path:
    """Write a standalone zoo.cfg into `data_dir` and return its path."""
    data_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir / "zoo.cfg"
    config.write_text(
        "\n".join(
            [
                f"tickTime={tick_time_ms}",
                f"dataDir={data_dir / 'data'}",
                f"clientPort={port}",
                f"clientPortAddress={host}",
                "admin.enableServer=false",
                "4lw.commands.whitelist=*",
                # ZooKeeper caps sessions at 20 ticks by default (4 s at a 200 ms tick), which would
                # silently shorten a broker's zookeeper.session.timeout.ms; allow up to 60 s.
                f"minSessionTimeout={2 * tick_time_ms}",
                "maxSessionTimeout=60000",
                # Snapshots of a test server are tiny; purge them so long runs do not fill the disk.
                "autopurge.purgeInterval=1",
                "maxClientCnxns=0",
                "",
            ]
        )
    )
    return config


def start_zookeeper(
    data_dir: str | os.PathLike[str],
    port: int | None = None,
    tick_time_ms: int = 200,
    startup_timeout: float = 30.0,
    java: str | None = None,
) -> ZooKeeperServer:
    """Start a standalone ZooKeeper on 127.0.0.1 and wait until it answers `ruok`."""
    java_bin = java or shutil.which("java")
    if java_bin is None:
        raise ZooKeeperStartError("java not found on PATH")
    directory = Path(data_dir).resolve()
    host = "127.0.0.1"
    # A port picked free can be taken before Java binds it; retry a few times with a new one.
    attempts = 1 if port is not None else 3
    last_error = ""
    for _ in range(attempts):
        chosen = port if port is not None else free_port()
        config = write_config(directory, chosen, tick_time_ms, host)
        log_path = directory / "zookeeper.out"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                [
                    java_bin,
                    "-Xms32m",
                    "-Xmx256m",
                    "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1",
                    "-Dzookeeper.jmx.log4j.disable=true",
                    "-cp",
                    zookeeper_classpath(),
                    "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                    str(config),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=directory,
                start_new_session=True,
            )
        server = ZooKeeperServer(process, host, chosen, directory)
        deadline = time.monotonic() + startup_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                last_error = log_path.read_text(errors="replace")[-2000:]
                break
            try:
                # `ruok` answers imok as soon as the process runs; `srvr` shows a Mode only once
                # the server accepts sessions.
                if four_letter_word(host, chosen, "ruok", timeout=0.5) == "imok" and "Mode:" in (
                    four_letter_word(host, chosen, "srvr", timeout=0.5)
                ):
                    return server
            except OSError:
                pass
            time.sleep(0.05)
        else:
            server.kill()
            raise ZooKeeperStartError(f"ZooKeeper on {host}:{chosen} not ready after {startup_timeout}s")
        server.kill()
    raise ZooKeeperStartError(f"ZooKeeper exited during startup: {last_error}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a standalone ZooKeeper on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=None, help="client port (default: a free one)")
    parser.add_argument("--data-dir", default=None, help="data directory (default: a temporary one)")
    parser.add_argument("--tick-time-ms", type=int, default=2000)
    args = parser.parse_args(argv)
    temporary = args.data_dir is None
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="zookeeper-"))

    def on_sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # run the finally below: the Java child must not outlive us

    # Before the connect string is printed: a caller may stop us as soon as it has read it, and a SIGTERM
    # that found the default action would leave ZooKeeper running without us.
    signal.signal(signal.SIGTERM, on_sigterm)
    server: ZooKeeperServer | None = None
    try:
        server = start_zookeeper(data_dir, port=args.port, tick_time_ms=args.tick_time_ms)
        print(f"zookeeper.connect={server.connect_string}", flush=True)
        server.process.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if server is not None:
            server.stop()
        if temporary:
            shutil.rmtree(data_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
