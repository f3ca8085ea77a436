"""Calls that several threads (or greenlets) of one process make at once, sent as one.

The first caller becomes the *leader*: it runs the batch function for itself and for every
caller that arrived meanwhile, then hands each its own answer. Callers that arrive while a
batch is under way wait for it to end; the first of them then leads the next batch. So at
most one batch is on its way at a time, and a batch holds what piled up while the previous
one travelled: a lone caller pays one lock and goes alone (no added wait), and the busier
the store, the more each batch carries (group commit). Used for the takes of idle slots
(slots/takes.py) and for the completions of one worker process's slots
(rqconc/worker/completions.py).

Rules for a batch function: it answers every value, in order, or raises. When it raises an
`Exception`, every caller of that batch gets the exception (each decides what it means for
its own call); when the leader is interrupted by a `BaseException` (a greenlet killed, a
KeyboardInterrupt), the leader re-raises it and the others get `abandoned()`: a batch
function's effects may then have happened or not, and only the caller can tell.
"""

from __future__ import annotations

import threading
from typing import Callable, Generic, List, Optional, Sequence, TypeVar

Value = TypeVar("Value")
Answer = TypeVar("Answer")


class _Call(Generic[Value, Answer]):
    __slots__ = ("value", "answer", "error", "lead", "answered")

    def __init__(self, value: Value) -> None:
        self.value = value
        self.answer: Optional[Answer] = None
        self.error: Optional[BaseException] = None
        self.lead = False
        self.answered: Optional[threading.Event] = None

    def outcome(self) -> Answer:
        if self.error is not None:
            raise self.error
        return self.answer  # type: ignore[return-value]


class Combiner(Generic[Value, Answer]):
    """`call(value)` from any thread; `run(values)` answers a batch of at most `limit`."""

    def __init__(
        self,
        run: Callable[[Sequence[Value]], Sequence[Answer]],
        limit: int,
        abandoned: Callable[[], BaseException],
    ) -> None:
        self._run = run
        self.limit = max(1, limit)
        self._abandoned = abandoned
        self._lock = threading.Lock()
        self._waiting: List[_Call[Value, Answer]] = []
        self._leading = False

    def call(self, value: Value) -> Answer:
        request: Optional[_Call[Value, Answer]]
        with self._lock:
            if not self._leading:  # alone (most calls): no request object, no wait
                self._leading = True
                request = None
            else:  # a leader answers this request or hands the lead to it
                request = _Call(value)
                request.answered = threading.Event()
                self._waiting.append(request)
        if request is None:
            try:
                return self._run((value,))[0]
            finally:
                self._hand_on()
        request.answered.wait()  # type: ignore[union-attr]
        if not request.lead:
            return request.outcome()
        self._lead()
        return request.outcome()

    def _hand_on(self) -> None:
        """A batch ended: the first caller that waits meanwhile leads the next one."""
        with self._lock:
            following = self._waiting[0] if self._waiting else None
            if following is not None:
                following.lead = True
            else:
                self._leading = False
        if following is not None:
            following.answered.set()  # type: ignore[union-attr]

    def _lead(self) -> None:
        # The leader is always the first waiting request: it sends the first `limit`.
        with self._lock:
            batch = self._waiting[: self.limit]
            del self._waiting[: self.limit]
        leader = batch[0]
        try:
            answers = self._run([request.value for request in batch])
            for request, answer in zip(batch, answers):
                request.answer = answer
        except Exception as exc:
            for request in batch:
                request.error = exc
        except BaseException as exc:
            leader.error = exc
            for request in batch[1:]:
                request.error = self._abandoned()
        finally:
            # Even when the batch raised: no caller may wait for an answer that never comes.
            for request in batch[1:]:
                request.answered.set()  # type: ignore[union-attr]
            self._hand_on()
