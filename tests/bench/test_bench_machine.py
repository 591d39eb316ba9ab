"""bench.machine: the page-cache write probe reports both rates and leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

from bench.machine import page_cache_write


def test_page_cache_probe_measures_new_and_cached_writes_and_cleans_up(tmp_path: Path) -> None:
    probe = page_cache_write(tmp_path, 8 * 1024 * 1024)
    assert set(probe) == {"new_file_MB/s", "rewrite_MB/s"}
    assert probe["new_file_MB/s"] > 0 and probe["rewrite_MB/s"] > 0
    assert list(tmp_path.iterdir()) == []
