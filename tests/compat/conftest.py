"""Brokers for the compat matrix: one of ours per test session (a `python -m broker` subprocess,
started by compat.targets exactly as `python -m compat` starts it), plus variants with other
broker settings started on demand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compat.targets import EmbeddedTarget


@pytest.fixture(scope="session")
def compat_target() -> Iterator[EmbeddedTarget]:
    with EmbeddedTarget() as target:
        yield target


@pytest.fixture(scope="module")
def no_auto_create_target() -> Iterator[EmbeddedTarget]:
    with EmbeddedTarget({"auto.create.topics.enable": "false"}, name="ours-no-auto-create") as target:
        yield target
