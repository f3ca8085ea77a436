"""Retry policies (SPEC section 7); the backoff while Redis is away is connection/backoff.py.

A policy is stored on the job as JSON, with exception types as qualified names, and decided
in the worker from the class hierarchy of the exception the job raised: a failure matches
`on=` when any class of its MRO carries one of the listed names.
"""

from __future__ import annotations

import json
import math
import random
import sys
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from rqconc import errors
from rqconc.queue.serialization import current_name, mro_names, type_name

ExceptionSpec = Union[type, str]

JOB_TIMEOUT = type_name(errors.JobTimeout)

# The longest delay a policy may ask for (ten years, the Lua steps' MAX_TTL): a worker turns
# delays into integer milliseconds, and a NaN, an infinity or a 300-digit due time would
# fail there, in the supervisor, job after job.
MAX_DELAY_SECONDS = 10 * 365 * 24 * 3600

# Transient errors of HTTP and cloud clients that the default policy retries, as
# (module, attribute). Looked up in sys.modules only: an exception of one of these libraries
# means the worker has already imported it, and importing the others (say botocore) just to
# compare names would slow every worker down. The real classes give the real names (httpx
# rewrites __module__ of its public classes).
_TRANSIENT_CLIENT_ERRORS: Tuple[Tuple[str, str], ...] = (
    ("redis.exceptions", "ConnectionError"),
    ("redis.exceptions", "TimeoutError"),
    ("requests.exceptions", "ConnectionError"),
    ("requests.exceptions", "Timeout"),
    ("httpx", "TimeoutException"),
    ("httpx", "NetworkError"),
    ("urllib3.exceptions", "TimeoutError"),
    ("urllib3.exceptions", "NewConnectionError"),
    ("urllib3.exceptions", "ProtocolError"),
    ("botocore.exceptions", "ConnectionError"),
    ("botocore.exceptions", "ReadTimeoutError"),
    ("botocore.exceptions", "ConnectTimeoutError"),
    ("botocore.exceptions", "EndpointConnectionError"),
)

# botocore's ClientError carries the service's answer: retried by default only when that is
# a throttling or a server-side (5xx) error. A failure's names (`failure_names`) then also
# hold this tag, which the default policy lists; Retry(on=...) may name it too.
CLIENT_ERROR = "botocore.exceptions.ClientError"
TRANSIENT_CLIENT_ERROR = CLIENT_ERROR + "[transient]"
# The error codes botocore's own retry handler treats as throttling, and the usual 5xx ones.
_TRANSIENT_CODES = frozenset(
    (
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "InternalServerException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
    )
)


def _exception_name(spec: ExceptionSpec) -> str:
    if isinstance(spec, str) and spec:
        return spec[len("builtins.") :] if spec.startswith("builtins.") else spec
    if isinstance(spec, type) and issubclass(spec, BaseException):
        return type_name(spec)
    raise ValueError(
        f"Retry(on=...) takes exception classes or their qualified names, not {spec!r}"
    )


def _check_number(label: str, value: Any, limit: Optional[float]) -> None:
    """A finite number >= 0 (and <= limit, if given), else ValueError naming the field."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"Retry({label}=...) must be a number, not {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"Retry({label}=...) must be a finite number, not {value!r}")
    if value < 0 or (limit is not None and value > limit):
        bounds = ">= 0" if limit is None else f"between 0 and {limit} (seconds)"
        raise ValueError(f"Retry({label}=...) must be {bounds}, not {value!r}")


class Retry:
    """Retry failures of the listed exception types up to `max` times, with an exponential,
    jittered delay: re-run n waits min(max_delay, backoff * factor**(n-1)), and with jitter a
    uniform draw between half of that and all of it. Without `on=`, every Exception except
    JobTimeout is retried (JobTimeout only when listed)."""

    def __init__(
        self,
        max: int = 7,
        backoff: float = 2.0,
        factor: float = 2.0,
        max_delay: float = 3600,
        jitter: bool = True,
        on: Optional[Union[ExceptionSpec, Iterable[ExceptionSpec]]] = None,
    ) -> None:
        if isinstance(max, bool) or not isinstance(max, int) or max < 0:
            raise ValueError(f"Retry(max=...) must be an int >= 0, not {max!r}")
        for label, value in (("backoff", backoff), ("factor", factor), ("max_delay", max_delay)):
            _check_number(label, value, None if label == "factor" else MAX_DELAY_SECONDS)
        self.max = max
        self.backoff = float(backoff)
        self.factor = float(factor)
        self.max_delay = float(max_delay)
        self.jitter = bool(jitter)
        if on is None:
            self.on: Optional[Tuple[str, ...]] = None
        else:
            specs = (on,) if isinstance(on, (type, str)) else tuple(on)
            self.on = tuple(current_name(_exception_name(spec)) for spec in specs)

    def __repr__(self) -> str:
        return (
            f"Retry(max={self.max}, backoff={self.backoff}, factor={self.factor}, "
            f"max_delay={self.max_delay}, jitter={self.jitter}, on={self.on})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Retry) and self.to_dict() == other.to_dict()

    def to_dict(self) -> Dict[str, Any]:
        return {
            "max": self.max,
            "backoff": self.backoff,
            "factor": self.factor,
            "max_delay": self.max_delay,
            "jitter": self.jitter,
            "on": None if self.on is None else list(self.on),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, data: Union[str, bytes]) -> Retry:
        return cls(**json.loads(data))

    def matches(self, exc_mro: Sequence[str]) -> bool:
        """Whether a failure whose class hierarchy has these names is one to retry."""
        if self.on is None:
            return "Exception" in exc_mro and JOB_TIMEOUT not in exc_mro
        return any(name in exc_mro for name in self.on)

    def base_delay(self, rerun: int) -> float:
        """The delay before re-run number `rerun` (1-based), before jitter."""
        try:
            delay = self.backoff * self.factor ** (rerun - 1)
        except OverflowError:
            delay = self.max_delay
        return min(self.max_delay, delay)

    def delay(self, rerun: int) -> float:
        delay = self.base_delay(rerun)
        return random.uniform(delay / 2, delay) if self.jitter else delay

    def next_delay(self, exc_mro: Sequence[str], attempts: int) -> Optional[float]:
        """Seconds to wait before the next run, or None to fail for good. `attempts` counts
        the executions that ended, this one included: it is also the next re-run's number."""
        if attempts > self.max or not self.matches(exc_mro):
            return None
        return self.delay(attempts)


def _is_transient_client_error(exc: BaseException) -> bool:
    """A botocore ClientError whose code is a throttling one, or whose HTTP status (or
    numeric code) is 5xx. Read defensively: `response` is whatever the SDK put there."""
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return False
    error = response.get("Error")
    code = str(error.get("Code", "")) if isinstance(error, dict) else ""
    metadata = response.get("ResponseMetadata")
    status = metadata.get("HTTPStatusCode") if isinstance(metadata, dict) else None
    if code in _TRANSIENT_CODES or (code.isdigit() and 500 <= int(code) <= 599):
        return True
    return isinstance(status, int) and 500 <= status <= 599


def failure_names(exc: BaseException) -> Tuple[str, ...]:
    """What a retry policy matches a failure against: the names of its class hierarchy,
    plus TRANSIENT_CLIENT_ERROR for a throttled or 5xx botocore ClientError."""
    names = mro_names(type(exc))
    if CLIENT_ERROR in names and _is_transient_client_error(exc):
        names.append(TRANSIENT_CLIENT_ERROR)
    return tuple(names)


def transient_error_names() -> List[str]:
    """Names of the transient errors the default policy retries, for the loaded libraries."""
    names = ["ConnectionError", "TimeoutError", type_name(errors.WorkerLost)]
    for module_name, attribute in _TRANSIENT_CLIENT_ERRORS:
        cls = getattr(sys.modules.get(module_name), attribute, None)
        if isinstance(cls, type):
            names.append(type_name(cls))
    if isinstance(getattr(sys.modules.get("botocore.exceptions"), "ClientError", None), type):
        names.append(TRANSIENT_CLIENT_ERROR)
    return names


def default_policy() -> Retry:
    """The policy of a job enqueued without retry=: up to 7 re-runs of transient errors."""
    return Retry(max=7, on=transient_error_names())


def policy_of(stored: Optional[Union[str, bytes]]) -> Retry:
    """The policy stored on a job ("" or None, or unreadable: the default one)."""
    if stored:
        try:
            return Retry.from_json(stored)
        # Corrupt data (bad JSON, NaN, nesting too deep to parse) must not stop the
        # failure's record: the job fails under the default policy, the worker stays up.
        except (TypeError, ValueError, RecursionError):
            pass
    return default_policy()
