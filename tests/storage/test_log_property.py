"""Model-based property test: random appends, rolls, truncations, log-start moves, retention and reopen
(clean and crash-like) against a plain list of batches; every read must return the model's bytes."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from records import batch_headers as iter_batches
from storage import Log, LogConfig, OffsetOutOfRangeError

from .conftest import build_batch

CFG = LogConfig(segment_bytes=1500, index_interval_bytes=200, segment_index_bytes=512, file_delete_delay_ms=0)

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 4), st.integers(0, 300)),
        st.tuples(st.just("roll"), st.just(0), st.just(0)),
        st.tuples(st.just("truncate"), st.integers(0, 60), st.just(0)),
        st.tuples(st.just("start"), st.integers(0, 60), st.just(0)),
        st.tuples(st.just("reopen_clean"), st.just(0), st.just(0)),
        st.tuples(st.just("reopen_crash"), st.just(0), st.just(0)),
        st.tuples(st.just("read"), st.integers(0, 80), st.integers(1, 3000)),
    ),
    max_size=40,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
def test_log_matches_model(operations: list[tuple[str, int, int]]) -> None:
    root = Path(tempfile.mkdtemp())
    try:
        _run(root / "model-0", operations)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(dir: Path, operations: list[tuple[str, int, int]]) -> None:
    lg = Log.open(dir, CFG)
    model: list[tuple[int, int, bytes]] = []  # (base, next, bytes)
    start = 0
    epoch = 0
    for op, a, b in operations:
        if op == "append":
            epoch += a == 4
            info = lg.append_as_leader(build_batch(a, value_size=b, seed=len(model)), epoch, now_ms=0)
            data = lg.read(info.first_offset, 1).records.read()
            model.append((info.first_offset, info.last_offset + 1, data))
        elif op == "roll":
            lg.roll()
        elif op == "truncate":
            leo = lg.log_end_offset
            below_start = a < lg.log_start_offset
            lg.truncate_to(a)
            if below_start:
                model = []
                assert lg.log_start_offset == lg.log_end_offset == a
            elif a < leo:
                # batches are never split: the batch containing ``a`` goes too
                model = [m for m in model if m[1] <= a]
                assert lg.log_end_offset <= a
                if model:
                    assert lg.log_end_offset == model[-1][1]
            start = min(start, lg.log_end_offset)
        elif op == "start":
            if a <= lg.log_end_offset:
                lg.maybe_increment_log_start_offset(a)
                start = max(start, a)
                lg.delete_retention_segments(0)
        elif op in ("reopen_clean", "reopen_crash"):
            clean = op == "reopen_clean"
            if clean:
                lg.close()
            else:
                lg.close_handles()
            lg = Log.open(dir, CFG, log_start_offset=start, had_clean_shutdown=clean)
        elif op == "read":
            if a < lg.log_start_offset or a > lg.log_end_offset:
                try:
                    lg.read(a, b)
                except OffsetOutOfRangeError:
                    pass
                else:
                    raise AssertionError("read outside [log start, log end] must fail")
            else:
                info = lg.read(a, b)
                expected = [m for m in model if m[1] > a]
                if not expected:
                    assert info.records is None
                else:
                    got = info.records.read()
                    assert got.startswith(expected[0][2])
                    assert got == b"".join(m[2] for m in expected)[: len(got)]
                    assert sum(h.size for _, h in iter_batches(got)) == len(got)  # whole batches only
        assert lg.log_start_offset == max(start, lg.segments[0].base_offset)
        model = [m for m in model if m[1] > lg.log_start_offset or m[0] >= lg.segments[0].base_offset]
        if model:
            assert lg.log_end_offset == model[-1][1]
        # the epoch cache never claims an epoch past the log end
        latest = lg.leader_epoch_cache.latest_entry()
        assert latest is None or latest[1] <= lg.log_end_offset
    lg.close()
