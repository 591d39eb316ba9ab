"""`./dev` on a fresh machine: which system packages it installs, how, and when it asks instead.

Each case runs the real `dev` script (and `.ci/run`) copied into a scratch directory, with a PATH that holds
only the shell tools the script uses plus stand-ins: `id` (to be root or not), `apt-get` and `sudo` (they
record how they were called and install nothing), and `kcat`/`java` when the case wants them present. A
stand-in virtual environment records the pytest/broker command instead of running it. Nothing on this
machine is installed or removed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
REAL_TOOLS = ("bash", "env", "dirname", "sha1sum", "cut", "rm", "touch", "sed", "cat")


class Scratch:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = root / "repo"
        self.bin = root / "bin"
        self.venv = root / "venv"
        self.calls = root / "calls.log"
        (self.repo / ".ci").mkdir(parents=True)
        shutil.copy2(REPO / "dev", self.repo / "dev")
        shutil.copy2(REPO / ".ci" / "run", self.repo / ".ci" / "run")
        (self.repo / "pyproject.toml").write_text("[project]\nname = 'scratch'\n")
        self.bin.mkdir()
        for tool in REAL_TOOLS:
            found = shutil.which(tool)
            assert found is not None, tool
            (self.bin / tool).symlink_to(found)
        self.stub("apt-get", 'echo "apt-get DEBIAN_FRONTEND=${DEBIAN_FRONTEND:-} $*" >> "$CALLS"')
        # The stand-in environment: already set up for this pyproject.toml, so setup() installs nothing.
        (self.venv / "bin").mkdir(parents=True)
        for name in ("python", "ruff"):
            self.stub(name, f'echo "{name} $*" >> "$CALLS"', where=self.venv / "bin")
        digest = subprocess.run(["sha1sum", str(self.repo / "pyproject.toml")], capture_output=True, text=True,
                                check=True).stdout[:12]
        (self.venv / f".installed-{digest}").touch()

    def stub(self, name: str, body: str, where: Path | None = None) -> None:
        path = (where or self.bin) / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)

    def as_user(self, uid: int) -> None:
        self.stub("id", f'[ "$1" = "-u" ] && echo {uid}')

    def with_sudo(self) -> None:
        self.stub("sudo", 'echo "sudo $*" >> "$CALLS"; exec "$@"')

    def run(self, *argv: str, script: str = "dev", **env: str) -> subprocess.CompletedProcess[str]:
        environ = {"PATH": str(self.bin), "CALLS": str(self.calls), "VENV": str(self.venv), **env}
        return subprocess.run([str(self.repo / script), *argv], env=environ, capture_output=True, text=True,
                              timeout=60)

    def recorded(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []


def assert_installed_then_ran(scratch: Scratch, packages: str, command: str) -> None:
    """apt-get update, then apt-get install of `packages`, non-interactively as root; `command` last."""
    calls = scratch.recorded()
    assert calls[:2] == ["apt-get DEBIAN_FRONTEND=noninteractive update -qq",
                         f"apt-get DEBIAN_FRONTEND=noninteractive install -y -qq {packages}"]
    assert calls[-1] == command


@pytest.fixture
def scratch(tmp_path: Path) -> Scratch:
    s = Scratch(tmp_path)
    s.as_user(0)
    for present in ("kcat", "java", "javac", "mvn"):
        s.stub(present, "exit 0")
    return s


@pytest.fixture(autouse=True)
def _zookeeper_jars() -> None:
    # The jars are files, not commands: a PATH cannot hide them. This machine has them; a case that
    # needs them missing is not expressible without uninstalling the package other work depends on.
    if not Path("/usr/share/java/zookeeper.jar").exists():
        pytest.skip("these cases assume Debian's zookeeper package is installed")


def test_nothing_missing_installs_nothing(scratch: Scratch) -> None:
    r = scratch.run("test", "-q", "tests/x.py")
    assert r.returncode == 0, r.stderr
    calls = scratch.recorded()
    assert "ruff check ." in calls and calls[-1] == "python -m pytest -q tests/x.py"
    assert not any(c.startswith("apt-get") for c in calls)


def test_the_whole_suite_runs_on_two_workers(scratch: Scratch) -> None:
    assert scratch.run("test").returncode == 0
    assert scratch.recorded()[-1] == "python -m pytest -n 2"
    assert scratch.run("test", TEST_WORKERS="0").returncode == 0
    assert scratch.recorded()[-1] == "python -m pytest"


def test_root_installs_what_is_missing_after_an_update(scratch: Scratch) -> None:
    (scratch.bin / "kcat").unlink()
    (scratch.bin / "java").unlink()
    r = scratch.run("test")
    assert r.returncode == 0, r.stderr
    assert_installed_then_ran(scratch, "kcat default-jre-headless", "python -m pytest -n 2")
    assert "installing system packages: kcat default-jre-headless" in r.stderr


def test_zookeeper_classpath_counts_as_zookeeper(scratch: Scratch) -> None:
    (scratch.bin / "kcat").unlink()
    r = scratch.run("test", ZOOKEEPER_CLASSPATH="/elsewhere/zookeeper.jar")
    assert r.returncode == 0, r.stderr
    assert "apt-get DEBIAN_FRONTEND=noninteractive install -y -qq kcat" in scratch.recorded()


def test_not_root_uses_sudo_when_there_is_one(scratch: Scratch) -> None:
    scratch.as_user(1000)
    scratch.with_sudo()
    (scratch.bin / "kcat").unlink()
    r = scratch.run("test")
    assert r.returncode == 0, r.stderr
    assert scratch.recorded()[:4] == [
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq",
        "apt-get DEBIAN_FRONTEND=noninteractive update -qq",
        "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat",
        "apt-get DEBIAN_FRONTEND=noninteractive install -y -qq kcat",
    ]


def test_not_root_without_sudo_stops_with_the_command_to_run(scratch: Scratch) -> None:
    scratch.as_user(1000)
    (scratch.bin / "kcat").unlink()
    (scratch.bin / "java").unlink()
    r = scratch.run("test")
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        "dev: missing system packages; as root, run: apt-get update && apt-get install -y kcat default-jre-headless"]
    assert scratch.recorded() == []  # neither apt-get nor the tests ran


def test_without_apt_get_names_the_packages(scratch: Scratch) -> None:
    (scratch.bin / "apt-get").unlink()
    (scratch.bin / "java").unlink()
    r = scratch.run("test")
    assert r.returncode == 1
    assert len(r.stderr.splitlines()) == 1 and "default-jre-headless" in r.stderr
    assert scratch.recorded() == []


def test_broker_needs_nothing_but_python(scratch: Scratch) -> None:
    scratch.as_user(1000)
    (scratch.bin / "kcat").unlink()
    (scratch.bin / "java").unlink()
    r = scratch.run("broker", "--override", "num.partitions=3")
    assert r.returncode == 0, r.stderr
    assert scratch.recorded()[-1] == "python -m broker --override num.partitions=3"
    assert not any(c.startswith("apt-get") for c in scratch.recorded())


def test_a_python_without_venv_gets_python3_venv(scratch: Scratch) -> None:
    template = scratch.root / "template"
    scratch.venv.rename(template)
    # A Debian python3 without python3-venv: `import ensurepip` fails; `-m venv DIR` then makes the stand-in.
    scratch.stub("python3", 'case "$*" in\n'
                            '  *sys.version_info*) exit 0 ;;\n'
                            '  *ensurepip*) exit 1 ;;\n'
                            f'  "-m venv "*) cp -r {template} "$3" ;;\n'
                            'esac')
    (scratch.bin / "cp").symlink_to(shutil.which("cp") or "/bin/cp")
    r = scratch.run("broker")
    assert r.returncode == 0, r.stderr
    assert_installed_then_ran(scratch, "python3-venv", "python -m broker")


def test_ci_runs_exactly_the_readme_test_command(scratch: Scratch) -> None:
    r = scratch.run(script=".ci/run")
    assert r.returncode == 0, r.stderr
    assert scratch.recorded()[-1] == "python -m pytest -n 2"
    readme = (REPO / "README.md").read_text()
    assert "\n    ./dev test\n" in readme and "\n    ./dev broker\n" in readme
    assert (REPO / ".ci" / "run").read_text().rstrip().endswith("exec ./dev test")
    assert os.access(REPO / ".ci" / "run", os.X_OK)
