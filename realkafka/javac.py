"""Java sources of this repository compiled against Kafka's jars, once per source text and classpath.

Contract:
- `compile_sources(sources, classpath)` returns the directory of the classes javac made of `sources` against
  `classpath`. It is cached as `<cache_root()>/classes/<digest of the classpath and every source's text>`: compiled
  into a temporary directory and renamed into place, so concurrent runs and an interrupted one never see half a
  compilation, and a changed source or jar set compiles anew.
- `javac` must be on PATH (Debian's `default-jdk-headless`); a compile error raises `CompileFailed` with javac's
  first lines.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from realkafka.jars import cache_root


class CompileFailed(RuntimeError):
    """javac refused the sources (or is missing)."""


def compile_sources(sources: Sequence[Path], classpath: str) -> Path:
    digest = hashlib.sha256(classpath.encode())
    for source in sources:
        digest.update(b"\0" + source.name.encode() + b"\0" + source.read_bytes())
    out = cache_root() / "classes" / digest.hexdigest()[:20]
    if out.is_dir():
        return out
    javac = shutil.which("javac")
    if javac is None:
        raise CompileFailed("javac is not installed (Debian: apt-get install -y default-jdk-headless)")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{out.name}.", dir=out.parent))
    try:
        done = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-cp", classpath, "-d", str(work),
                               *map(str, sources)], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            head = "\n".join((done.stdout + done.stderr).strip().splitlines()[:20])
            raise CompileFailed(f"javac {' '.join(s.name for s in sources)} failed:\n{head}")
        try:
            work.rename(out)
        except OSError:  # another run compiled the same sources first
            if not out.is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out
