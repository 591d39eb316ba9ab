"""Purgatory: complete at once when possible, else on a key's event, else exactly once at the deadline."""

from __future__ import annotations

import asyncio

from broker.server.purgatory import DelayedOperation, Purgatory


class Op(DelayedOperation):
    def __init__(self, delay_ms: int, ready: list[bool]) -> None:
        super().__init__(delay_ms)
        self.ready = ready
        self.completions = 0
        self.expired = False
        self.done = asyncio.Event()

    def try_complete(self) -> bool:
        return self.ready[0] and self.force_complete()

    def on_complete(self) -> None:
        self.completions += 1
        self.done.set()

    def on_expiration(self) -> None:
        self.expired = True


def test_completes_immediately_when_ready() -> None:
    async def main() -> None:
        p = Purgatory("t")
        op = Op(1000, [True])
        assert p.try_complete_else_watch(op, ["k"])
        assert op.completions == 1 and p.watched() == 0
    asyncio.run(main())


def test_completes_on_check_and_only_once() -> None:
    async def main() -> None:
        p = Purgatory("t")
        ready = [False]
        op = Op(10_000, ready)
        assert not p.try_complete_else_watch(op, ["a", "b"])
        assert p.check_and_complete("a") == 0
        ready[0] = True
        assert p.check_and_complete("b") == 1
        assert p.check_and_complete("a") == 0
        assert op.completions == 1 and not op.expired
    asyncio.run(main())


def test_expires_at_deadline() -> None:
    async def main() -> None:
        p = Purgatory("t")
        op = Op(20, [False])
        p.try_complete_else_watch(op, ["k"])
        assert not op.expired
        await op.done.wait()  # the purgatory's timer, nothing else, completes it
        assert op.expired and op.completions == 1
        p.purge_completed()
        assert p.watched() == 0
    asyncio.run(main())


def test_shutdown_answers_everyone() -> None:
    async def main() -> None:
        p = Purgatory("t")
        ops = [Op(60_000, [False]) for _ in range(3)]
        for i, op in enumerate(ops):
            p.try_complete_else_watch(op, [i])
        p.shutdown()
        assert all(op.expired and op.completions == 1 for op in ops)
    asyncio.run(main())


def test_expire_within_brings_the_deadline_forward_never_back() -> None:
    async def main() -> None:
        p = Purgatory("t")
        early = Op(60_000, [False])
        assert not early.expire_within(0.01), "not watched yet: no deadline to move"
        p.try_complete_else_watch(early, ["k"])
        assert early.expire_within(0.01)
        await asyncio.wait_for(early.done.wait(), 5)
        assert early.expired and early.completions == 1
        late = Op(10, [False])
        p.try_complete_else_watch(late, ["k"])
        assert late.expire_within(60)  # later than its own deadline: kept
        await asyncio.wait_for(late.done.wait(), 5)
        assert late.expired and late.completions == 1
    asyncio.run(main())
