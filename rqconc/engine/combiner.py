"""Calls that several threads (or greenlets) of one process make at once, sent as one.

The first caller becomes the *leader*: it runs the batch function for itself and for every
caller that arrived meanwhile, then hands each its own answer. Callers that arrive while a
batch is under way wait for it to end; the first of them then leads the next batch. So at
most one batch is on its way at a time, and a batch holds what piled up while the previous
one travelled: a lone caller pays one lock and goes alone (no added wait), and the busier
the store, the more each batch carries (group commit). Used for the takes of idle slots
(take_combiner.py) and for the completions of one worker process's slots
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
        # Made only for a caller that must wait (most calls lead: a lone caller pays none).
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
        request: _Call[Value, Answer] = _Call(value)
        with self._lock:
            self._waiting.append(request)
            # A leader, if any, answers this request or hands the lead to it.
            request.lead = not self._leading
            self._leading = True
            if not request.lead:
                request.answered = threading.Event()
        if request.answered is not None:
            request.answered.wait()
            if not request.lead:
                return request.outcome()
        self._lead()
        return request.outcome()

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
            with self._lock:
                following = self._waiting[0] if self._waiting else None
                if following is not None:
                    following.lead = True
                else:
                    self._leading = False
            for request in batch[1:]:
                request.answered.set()  # type: ignore[union-attr]
            if following is not None:
                following.answered.set()  # type: ignore[union-attr]
