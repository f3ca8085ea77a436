"""Calls that the tasks of one event loop make in one turn of it, sent as one batch (the
native core of the asyncio backend, native_slots.py): the takes of its idle slots, the
completions of the jobs that finished.

A call adds its value to the pending ones; the first of a turn schedules the send with
`call_soon`, so every task that runs in the same turn adds its own before the batch leaves.
While a batch is on its way, new calls pile up and leave together as soon as it is back
(group commit, as slots/combiner.py does for threads). So one step per turn at most is on
its way, and a lone call adds no wait.

Rules for the batch function: it answers every value, in order, or raises; when it raises
an `Exception`, every caller of that batch gets it. A caller whose task was cancelled while
its batch travelled (its slot was ended) has no one to answer: its answer goes to
`unanswered`, which must settle what it holds (a job leased for nobody goes back).
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Generic, List, Optional, Sequence, Tuple, TypeVar

Value = TypeVar("Value")
Answer = TypeVar("Answer")


class TurnBatches(Generic[Value, Answer]):
    """`await call(value)` from any task of the loop; `run(values)` answers a batch of at
    most `limit`. Made and used in the loop's thread only."""

    def __init__(
        self,
        run: Callable[[Sequence[Value]], Awaitable[Sequence[Answer]]],
        limit: int,
        unanswered: Optional[Callable[[Value, Answer], None]] = None,
    ) -> None:
        self._run = run
        self.limit = max(1, limit)
        self._unanswered = unanswered
        self._pending: List[Tuple[Value, asyncio.Future]] = []
        self._sending = False
        # What the loop keeps of the sending task: a task only weakly referenced may vanish.
        self._sender: Optional[asyncio.Task] = None

    async def call(self, value: Value) -> Answer:
        loop = asyncio.get_running_loop()
        answered = loop.create_future()
        self._pending.append((value, answered))
        if not self._sending:
            self._sending = True
            loop.call_soon(self._send_soon, loop)
        return await answered

    def _send_soon(self, loop: asyncio.AbstractEventLoop) -> None:
        self._sender = loop.create_task(self._send())

    async def _send(self) -> None:
        try:
            while self._pending:
                batch = self._pending[: self.limit]
                del self._pending[: self.limit]
                await self._answer(batch)
        finally:
            self._sending = False
            self._sender = None

    async def _answer(self, batch: List[Tuple[Value, asyncio.Future]]) -> None:
        try:
            answers = await self._run([value for value, _ in batch])
        except Exception as exc:
            for _, answered in batch:
                if not answered.done():
                    answered.set_exception(exc)
            return
        except BaseException:  # the loop is closing: nobody waits for these any more
            for _, answered in batch:
                answered.cancel()
            raise
        for (value, answered), answer in zip(batch, answers):
            if not answered.done():
                answered.set_result(answer)
            elif self._unanswered is not None:
                self._unanswered(value, answer)
