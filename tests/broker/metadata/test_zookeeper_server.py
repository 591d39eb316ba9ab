"""The ZooKeeper runner starts Debian's ZooKeeper on loopback, and stop/kill really end it."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from broker.metadata.zookeeper_server import ZooKeeperStartError, four_letter_word, start_zookeeper
from tests.zookeeper import start_zookeeper as start_test_zookeeper

REPO = Path(__file__).resolve().parents[3]


def test_starts_on_loopback_answers_and_stops(tmp_path):
    with start_test_zookeeper(tmp_path) as server:
        host, port = server.connect_string.split(":")
        assert host == "127.0.0.1" and server.is_running()
        assert four_letter_word(host, int(port), "ruok") == "imok"
        status = four_letter_word(host, int(port), "srvr")
        assert "Mode: standalone" in status and "3.8" in status
        config = (server.data_dir / "zoo.cfg").read_text()
        assert "clientPortAddress=127.0.0.1" in config and "admin.enableServer=false" in config
        client = KazooClient(hosts=server.connect_string)
        client.start(timeout=10)
        client.create("/hello", b"world")
        assert client.get("/hello")[0] == b"world"
        client.stop()
        client.close()
    assert not server.is_running()
    with pytest.raises(OSError):
        socket.create_connection((host, int(port)), timeout=0.5).close()


def test_kill_is_sigkill_and_data_survives_restart_on_same_port(tmp_path):
    server = start_zookeeper(tmp_path / "zk")
    try:
        client = KazooClient(hosts=server.connect_string)
        client.start(timeout=10)
        client.create("/kept", b"1")
        client.stop()
        client.close()
        server.kill()
        assert server.process.returncode == -9
        restarted = start_zookeeper(tmp_path / "zk", port=server.port)
        try:
            client = KazooClient(hosts=restarted.connect_string)
            client.start(timeout=10)
            assert client.get("/kept")[0] == b"1"
            client.stop()
            client.close()
        finally:
            restarted.stop()
    finally:
        server.stop()


def test_port_in_use_fails_with_typed_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(ZooKeeperStartError):
            start_zookeeper(tmp_path, port=busy.getsockname()[1], startup_timeout=10)


def test_command_line_prints_connect_string_and_stops_on_sigterm(tmp_path):
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "broker.metadata.zookeeper_server",
            "--data-dir",
            str(tmp_path),
            "--tick-time-ms",
            "200",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        assert line.startswith("zookeeper.connect=127.0.0.1:")
        host, port = line.split("=", 1)[1].split(":")
        assert four_letter_word(host, int(port), "ruok") == "imok"
        process.terminate()
        assert process.wait(timeout=15) == 0
        # ZooKeeper itself (the Java child) stopped with the command: nothing answers on its port.
        with pytest.raises(OSError):
            socket.create_connection((host, int(port)), timeout=1).close()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
