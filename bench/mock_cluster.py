"""Host librdkafka's built-in mock cluster in its own process: `python -m bench.mock_cluster [BROKERS]`.

Contract: creates a confluent-kafka client with `test.mock.num.brokers=BROKERS` (default 1),
prints one line `BOOTSTRAP host:port[,host:port...]` on stdout once the mock brokers answer
metadata, then keeps the cluster alive until stdin reaches EOF or the process gets SIGTERM.
Hosting it in a separate process keeps the mock's threads off the load generator's CPU and
lets the harness read the mock's RSS and start-up time like any other broker process.
Known limits of the mock (librdkafka 2.x): no CreateTopics/DeleteTopics (topics are
auto-created with 4 partitions on first metadata request), little retained data (the log start
offset moves up after a few MB per partition), no persistence.
"""

from __future__ import annotations

import signal
import sys
import threading


def main(argv: list[str]) -> int:
    from confluent_kafka import Producer

    brokers = int(argv[0]) if argv else 1
    host = Producer({"test.mock.num.brokers": brokers, "log_level": 3})
    metadata = host.list_topics(timeout=10)
    addresses = ",".join(f"{b.host}:{b.port}" for b in sorted(metadata.brokers.values(), key=lambda b: b.id))
    print(f"BOOTSTRAP {addresses}", flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # stdin EOF means the harness went away: never outlive it.
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    while not stop.wait(0.2):
        host.poll(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
