"""Kafka's jars from Maven Central, resolved once into a local cache.

Contract:
- A `Bundle` names Maven artifacts (`group:artifact:version`) and a logging binding; `resolve(bundle)` returns a
  directory holding the artifacts and their runtime dependencies (what `mvn dependency:copy-dependencies` copies
  for a small generated pom), plus the SLF4J binding Kafka's own distribution ships for that version (reload4j
  before 4.0, Log4j 2 from 4.0, slf4j-simple for a bare client). The jars are those Kafka's release tarball
  puts in `libs/`, give or take the tools' extras.
- The cache is `$REAL_KAFKA_CACHE`, else `~/.cache/kafka-wire-broker/jars`; one folder per bundle, marked
  complete only once every jar is there, so an interrupted resolution is redone and a finished one is reused by
  every later test, run and process (resolution is serialized with a file lock); a folder whose logging binding
  lacks a jar it needs (Log4j's API beside its core) is resolved again. Maven's own repository (`~/.m2`) keeps
  the downloads themselves.
- `mvn` must be on PATH (Debian's `maven`); a failed resolution raises `JarsUnavailable` with Maven's last
  lines, never a half-built classpath.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from realkafka import CONNECT_KAFKA, STREAMS_KAFKA

_STAMP = ".resolved"
SLF4J_1 = "1.7.36"


class JarsUnavailable(RuntimeError):
    """Maven could not resolve a bundle (no `mvn`, no network, an artifact not served)."""


@dataclass(frozen=True)
class Bundle:
    name: str  # the cache folder, e.g. "kafka-4.4.0"
    artifacts: tuple[str, ...]  # group:artifact:version
    logging: str = "simple"  # "reload4j", "log4j2", "simple" or "none"
    exclusions: tuple[str, ...] = field(default=())  # group:artifact left out everywhere


def major(version: str) -> int:
    return int(version.split(".")[0])


def kafka_server(version: str) -> Bundle:
    """`kafka.Kafka` (controller, broker, ZooKeeper-mode broker), its storage tool and the command-line tools."""
    return Bundle(f"kafka-{version}",
                  (f"org.apache.kafka:kafka_2.13:{version}", f"org.apache.kafka:kafka-tools:{version}"),
                  logging="log4j2" if major(version) >= 4 else "reload4j")


def kafka_clients(version: str) -> Bundle:
    return Bundle(f"kafka-clients-{version}", (f"org.apache.kafka:kafka-clients:{version}",))


def kafka_streams(version: str = STREAMS_KAFKA) -> Bundle:
    return Bundle(f"kafka-streams-{version}", (f"org.apache.kafka:kafka-streams:{version}",))


def kafka_connect(version: str = CONNECT_KAFKA) -> Bundle:
    """A Connect worker (`ConnectDistributed`) with the FileStream connectors and the JSON converter."""
    return Bundle(f"kafka-connect-{version}",
                  (f"org.apache.kafka:connect-runtime:{version}", f"org.apache.kafka:connect-file:{version}",
                   f"org.apache.kafka:connect-json:{version}"),
                  logging="log4j2" if major(version) >= 4 else "reload4j")


def spark_kafka(spark_version: str) -> Bundle:
    """Spark's Kafka source and sink for a Spark release; Spark's own jars are `provided` and not copied, but
    the connector's other runtime dependencies are, some of which a Spark installation already ships (see
    `missing_from`)."""
    return Bundle(f"spark-sql-kafka-{spark_version}",
                  (f"org.apache.spark:spark-sql-kafka-0-10_2.13:{spark_version}",), logging="none")


def _artifact_names(jar: str) -> set[str]:
    """The names a jar's artifact id may have: Maven copies `<artifactId>-<version>.jar`, and a version starts
    with a digit (`spark-sql-kafka-0-10_2.13-4.2.0.jar` may be `spark-sql-kafka`, `spark-sql-kafka-0` or
    `spark-sql-kafka-0-10_2.13`)."""
    stem = jar.removesuffix(".jar")
    return {stem[:i] for i in range(1, len(stem) - 1) if stem[i] == "-" and stem[i + 1].isdigit()}


def same_artifact(a: str, b: str) -> bool:
    """Two jar file names of one artifact in two versions: they differ only after a hyphen followed by a digit
    on both sides (`slf4j-api-1.7.36.jar` and `slf4j-api-2.0.17.jar`; not `log4j-1.2-api-2.24.3.jar` and
    `log4j-api-2.24.3.jar`)."""
    return bool(_artifact_names(a) & _artifact_names(b))


def missing_from(bundle: Bundle, installed: Path) -> list[Path]:
    """The bundle's jars of artifacts that no jar in `installed` (e.g. pyspark's `jars/`) is a version of.

    The installation's own version of an artifact is the one it was built and tested with; a second version
    beside it on one classpath (slf4j-api 1.7 beside Spark's 2.0, an older scala-library) is a conflict, so the
    bundle's copy is left out."""
    present = [p.name for p in installed.glob("*.jar")]
    return [jar for jar in jars(bundle) if not any(same_artifact(jar.name, other) for other in present)]


def cache_root() -> Path:
    root = os.environ.get("REAL_KAFKA_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "kafka-wire-broker" / "jars"


def _pom(bundle: Bundle) -> str:
    deps = []
    for coordinates in bundle.artifacts:
        group, artifact, version = coordinates.split(":")
        exclusions = "".join(
            f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
            for g, a in (e.split(":") for e in bundle.exclusions))
        deps.append(f"<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
                    f"<version>{version}</version><exclusions>{exclusions}</exclusions></dependency>")
    return ("<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0</modelVersion>"
            f"<groupId>kafka-wire-broker.realkafka</groupId><artifactId>{bundle.name}</artifactId>"
            "<version>0</version><packaging>pom</packaging>"
            f"<dependencies>{''.join(deps)}</dependencies></project>\n")


def _mvn(args: list[str], cwd: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailable("Maven is not installed (Debian: apt-get install -y maven)")
    done = subprocess.run([mvn, "-B", "-q", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        lines = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout + done.stderr).strip().splitlines()  # colour codes
        cause = next((line for line in lines if line.startswith("[ERROR]")), "no [ERROR] line")
        tail = "\n".join(lines[-15:])
        raise JarsUnavailable(f"mvn {args[0]} failed: {cause}\nmvn {' '.join(args)} in {cwd}:\n{tail}")


def _binding(bundle: Bundle, lib: Path) -> list[str]:
    """The SLF4J binding Kafka's tarball ships beside these jars (the artifacts themselves bring only the API)."""
    if bundle.logging == "reload4j":
        return [f"org.slf4j:slf4j-reload4j:{SLF4J_1}"]
    if bundle.logging == "log4j2":
        core = sorted(lib.glob("log4j-core-*.jar"))
        version = core[-1].name[len("log4j-core-"):-len(".jar")] if core else "2.24.3"
        artifacts = [f"org.apache.logging.log4j:log4j-slf4j-impl:{version}"]
        if not core:  # dependency:copy copies the artifact alone: Log4j's API comes with its core, by name
            artifacts += [f"org.apache.logging.log4j:log4j-core:{version}",
                          f"org.apache.logging.log4j:log4j-api:{version}"]
        return artifacts
    if bundle.logging == "simple":
        return [f"org.slf4j:slf4j-simple:{SLF4J_1}"]
    return []


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# Jars (by name prefix) a logging binding cannot run without: a cached bundle lacking one is resolved again.
_BINDING_JARS = {"log4j2": ("log4j-api-", "log4j-core-", "log4j-slf4j-impl-"), "simple": ("slf4j-simple-",)}


def _complete(bundle: Bundle, target: Path) -> bool:
    try:
        names = (target / _STAMP).read_text().split()
    except OSError:
        return False
    return all(any(n.startswith(prefix) for n in names) for prefix in _BINDING_JARS.get(bundle.logging, ()))


def resolve(bundle: Bundle) -> Path:
    """The folder of the bundle's jars, resolving them with Maven the first time."""
    target = cache_root() / bundle.name
    if _complete(bundle, target):
        return target
    with _locked(cache_root() / f"{bundle.name}.lock"):
        if _complete(bundle, target):
            return target
        work = Path(tempfile.mkdtemp(prefix=f"{bundle.name}.", dir=cache_root()))
        try:
            (work / "pom.xml").write_text(_pom(bundle))
            lib = work / "lib"
            _mvn(["dependency:copy-dependencies", f"-DoutputDirectory={lib}", "-DincludeScope=runtime"], work)
            for artifact in _binding(bundle, lib):
                _mvn(["dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={lib}"], work)
            jars = sorted(p.name for p in lib.glob("*.jar"))
            if not jars:
                raise JarsUnavailable(f"Maven resolved no jars for {bundle.artifacts}")
            (lib / _STAMP).write_text("\n".join(jars) + "\n")
            shutil.rmtree(target, ignore_errors=True)
            lib.replace(target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def jars(bundle: Bundle) -> list[Path]:
    return sorted(resolve(bundle).glob("*.jar"))


def classpath(*bundles: Bundle) -> str:
    """A Java classpath of the bundles' jars (a jar of the same file name appears once)."""
    seen: dict[str, Path] = {}
    for bundle in bundles:
        for jar in jars(bundle):
            seen.setdefault(jar.name, jar)
    return os.pathsep.join(str(p) for p in seen.values())
