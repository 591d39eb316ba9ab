"""Print a ZooKeeper subtree with each node's data: a read-only look at what the cluster stored.

    python -m broker.metadata.zk_dump 127.0.0.1:2181[/chroot] [/path] [--max-nodes N]

Contract: one line per znode, depth-first in name order: `<path> [v<version>] [ephemeral] <data>`
(data decoded as UTF-8, cut at 300 characters). At most `--max-nodes` nodes (default 10000) are
printed. /zookeeper (the server's own subtree) is skipped. Exit status 1 if ZooKeeper cannot be
reached or the path does not exist.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError


def walk(client: KazooClient, path: str, limit: int) -> Iterator[str]:
    stack = [path]
    count = 0
    while stack and count < limit:
        current = stack.pop()
        if current == "/zookeeper":
            continue
        try:
            data, stat = client.get(current)
            children = client.get_children(current)
        except NoNodeError:
            continue  # deleted while walking
        count += 1
        text = (data or b"").decode("utf-8", "replace")
        if len(text) > 300:
            text = text[:300] + "..."
        flags = f"v{stat.version}" + (" ephemeral" if stat.ephemeralOwner else "")
        yield f"{current} [{flags}] {text}".rstrip()
        base = "" if current == "/" else current
        stack.extend(f"{base}/{child}" for child in sorted(children, reverse=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker.metadata.zk_dump", description=__doc__.split("\n")[0])
    parser.add_argument("connect", help="zookeeper.connect, e.g. 127.0.0.1:2181 or 127.0.0.1:2181/kafka")
    parser.add_argument("path", nargs="?", default="/")
    parser.add_argument("--max-nodes", type=int, default=10000)
    args = parser.parse_args(argv)
    client = KazooClient(hosts=args.connect, read_only=True)
    try:
        client.start(timeout=10)
    except (KazooTimeoutError, KazooException) as e:
        print(f"cannot connect to {args.connect}: {e}", file=sys.stderr)
        return 1
    try:
        if client.exists(args.path) is None:
            print(f"no node {args.path}", file=sys.stderr)
            return 1
        for line in walk(client, args.path, args.max_nodes):
            print(line)
        return 0
    finally:
        client.stop()
        client.close()


if __name__ == "__main__":
    sys.exit(main())
