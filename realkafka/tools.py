"""Kafka's command-line tools (`kafka-topics.sh` and the others) run from a version's jars.

Contract:
- `run(version, "kafka-topics", [...])` runs the tool's main class as the shell script of that release would
  (the class moved from `kafka.admin`/`kafka.tools` to `org.apache.kafka.tools` between releases: the first
  candidate present in the jars is used) and returns the finished process; `check=True` raises `ToolFailed`
  with its output when it exits non-zero. Logging goes to stderr at WARN, as `tools-log4j` configures it.
- A tool never runs longer than `timeout` seconds.
"""

from __future__ import annotations

import subprocess
import tempfile
import zipfile
from functools import cache
from pathlib import Path

from realkafka import jars

TOOL_CLASSES: dict[str, tuple[str, ...]] = {
    "kafka-topics": ("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand"),
    "kafka-consumer-groups": ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                              "kafka.admin.ConsumerGroupCommand"),
    "kafka-dump-log": ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments"),
    "kafka-metadata-quorum": ("org.apache.kafka.tools.MetadataQuorumCommand",),
    "kafka-features": ("org.apache.kafka.tools.FeatureCommand", "kafka.admin.FeatureCommand"),
    "kafka-storage": ("kafka.tools.StorageTool",),
    "kafka-configs": ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand"),
    "kafka-acls": ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand"),
    "kafka-cluster": ("org.apache.kafka.tools.ClusterTool",),
    "kafka-console-producer": ("org.apache.kafka.tools.ConsoleProducer", "kafka.tools.ConsoleProducer"),
    "kafka-console-consumer": ("org.apache.kafka.tools.consumer.ConsoleConsumer", "kafka.tools.ConsoleConsumer"),
    "kafka-get-offsets": ("org.apache.kafka.tools.GetOffsetShell", "kafka.tools.GetOffsetShell"),
    "kafka-leader-election": ("org.apache.kafka.tools.LeaderElectionCommand", "kafka.admin.LeaderElectionCommand"),
    "kafka-reassign-partitions": ("org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
                                  "kafka.admin.ReassignPartitionsCommand"),
    "kafka-transactions": ("org.apache.kafka.tools.TransactionsCommand",),
    "kafka-client-metrics": ("org.apache.kafka.tools.ClientMetricsCommand",),
    "kafka-broker-api-versions": ("org.apache.kafka.tools.BrokerApiVersionsCommand",
                                  "kafka.admin.BrokerApiVersionsCommand"),
    "kafka-producer-perf-test": ("org.apache.kafka.tools.ProducerPerformance",),
    "kafka-consumer-perf-test": ("org.apache.kafka.tools.ConsumerPerformance",),
}
TOOL_JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
                    "-Djava.awt.headless=true")
_TOOLS_LOG4J2 = """status = error
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
"""
_TOOLS_LOG4J1 = """log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""


class ToolFailed(RuntimeError):
    def __init__(self, tool: str, done: subprocess.CompletedProcess[str]) -> None:
        super().__init__(f"{tool} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}")
        self.done = done


@cache
def _classes(version: str) -> frozenset[str]:
    names: set[str] = set()
    for jar in jars.jars(jars.kafka_server(version)):
        if jar.name.startswith("kafka"):
            with zipfile.ZipFile(jar) as z:
                names.update(n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
    return frozenset(names)


def main_class(version: str, tool: str) -> str:
    present = _classes(version)
    for candidate in TOOL_CLASSES[tool]:
        if candidate in present:
            return candidate
    raise LookupError(f"Kafka {version} has no {tool} (looked for {', '.join(TOOL_CLASSES[tool])})")


@cache
def _log_config(version: str) -> Path:
    directory = Path(tempfile.mkdtemp(prefix=f"realkafka-tools-{version}-"))
    if jars.major(version) >= 4:
        path = directory / "tools-log4j2.properties"
        path.write_text(_TOOLS_LOG4J2)
    else:
        path = directory / "tools-log4j.properties"
        path.write_text(_TOOLS_LOG4J1)
    return path


def command(version: str, tool: str, args: list[str]) -> list[str]:
    config = _log_config(version)
    logging = (f"-Dlog4j2.configurationFile={config}" if jars.major(version) >= 4
               else f"-Dlog4j.configuration=file:{config}")
    return ["java", *TOOL_JVM_OPTIONS, logging, "-cp", jars.classpath(jars.kafka_server(version)),
            main_class(version, tool), *args]


def run(version: str, tool: str, args: list[str], *, timeout: float = 120.0, check: bool = True,
        input: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command(version, tool, args), capture_output=True, text=True, timeout=timeout,
                          input=input, stdin=None if input is not None else subprocess.DEVNULL)
    if check and done.returncode != 0:
        raise ToolFailed(tool, done)
    return done
