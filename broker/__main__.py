"""`kafka-wire-broker [--config server.properties] [--override key=value ...]` (the same as `python -m broker`)
`kafka-wire-broker format --cluster-id ID ...` formats a KRaft broker's log dirs (broker/kraft/format.py);
`kafka-wire-broker dump-log [--print-data-log] PATH ...` prints segment, index and checkpoint files as Kafka's
kafka-dump-log.sh does (storage/dump_log.py).

Starts one broker. With no arguments: the embedded default (one node, PLAINTEXT://127.0.0.1:9092,
data in ./data). SIGTERM or SIGINT shuts it down cleanly (exit 0); a bad configuration value exits 1 with
one line naming the key and the value. Keys Kafka defines but this broker does not act on, and keys that
are not Kafka's at all, are logged in (at most) two warning lines and the broker starts.
The soft limit on open files is raised to the hard one first, as the JVM does for Kafka (MaxFDLimit): each
partition holds descriptors for its segment files, each connection one.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import resource
import signal
import sys
from pathlib import Path
from typing import Any

from broker import lazy_packages

# Before anything imports them: kafka-python's __init__ loads the whole client; crc32c's looks its version up in
# the installed distributions (importlib.metadata), while records/ and storage/ import only its extension module.
lazy_packages.install("kafka", "crc32c")

from broker.config.kafka_config import ConfigError, KafkaConfig  # noqa: E402 - after the stand-in above


def setup_logging(level: str = "INFO") -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="[%(asctime)s] %(levelname)s %(message)s (%(name)s)",
        stream=sys.stderr,
    )


def raise_open_files_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit (Linux's default soft limit, 1024, is a few hundred partitions)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=_prog(), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", "-c", help="a Kafka server.properties file")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="override one property (repeatable)")
    parser.add_argument("--log-level", default="INFO")
    return parser.parse_args(argv)


async def serve(config: KafkaConfig) -> int:
    from broker.kafka_server import KafkaServer

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    servers: list[Any] = []  # started in order, shut down in reverse: a combined node's controller first
    try:
        if "controller" in config.process_roles:
            from broker.quorum.server import ControllerServer

            servers.append(ControllerServer(config))
            await servers[-1].start()
        if config.process_roles != ["controller"]:
            servers.append(KafkaServer(config))
            await servers[-1].start()
    except Exception as e:
        logging.getLogger("broker").error("start-up failed: %s", e, exc_info=not isinstance(e, ConfigError))
        for server in reversed(servers):
            await server.shutdown()
        return 1
    await stop.wait()
    for server in reversed(servers):
        await server.shutdown()
    return 0


def _prog() -> str:
    name = Path(sys.argv[0]).name
    return name if name and not name.endswith(".py") else "python -m broker"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["format"]:
        from broker.kraft.format import main as format_main

        return format_main(argv[1:])
    if argv[:1] == ["dump-log"]:
        from storage.dump_log import main as dump_log_main

        return dump_log_main(argv[1:])
    args = parse_args(argv)
    setup_logging(args.log_level)
    raise_open_files_limit()
    try:
        config = KafkaConfig.load(args.config, args.override)
    except ConfigError as e:
        print(f"configuration error: {e}", file=sys.stderr)
        return 1
    log = logging.getLogger("broker")
    for line in config.startup_warnings():
        log.warning("%s", line)
    import uvloop

    return uvloop.run(serve(config))


if __name__ == "__main__":
    sys.exit(main())
