"""Numbers the Python side and the Lua steps (rqconc/store/lua/) must agree on.

A job's hash stores only the fields that differ from their defaults, so every reader —
Python here, the Lua steps there — fills a missing field with the same value. Lua cannot
import them: each Lua file declares the ones it uses as `local NAME = value`, and
tests/store/test_lua_steps.py (test_numbers_lua_and_python_share_agree) fails when a
value differs from the one below.
"""

DEFAULT_PRIORITY = 1
MAX_PRIORITY = 100
DEFAULT_TIMEOUT = 180
DEFAULT_RESULT_TTL = 500
DEFAULT_FAILURE_TTL = 365 * 24 * 3600  # dead letters are kept a year unless told otherwise
# The longest TTL a step accepts (a larger stored value falls back to the default there).
MAX_TTL = 10 * 365 * 24 * 3600
# Event retention (SPEC 18), applied by the workers' maintenance pass (lua/trim_events.lua),
# not by the steps: every entry newer than this is kept (--events-retention) ...
EVENTS_RETENTION_SECONDS = 24 * 3600
# ... up to this many entries (--events-max); beyond it the oldest go.
EVENTS_MAX = 1_000_000
# How long (ms) the enqueue step's `enqueued:<id>` mark outlives a job that may be deleted
# quickly (kept 0 s or briefly): long enough for `Queue.enqueue`'s one resend after a lost
# reply to find it although the job already ran and is gone.
ENQUEUE_MARK_MS = 10000
# A job's log (`job.log()`, the `rqconc.job` logger; lua/job_log.lua) keeps its newest
# lines, at most this many and this many bytes in all (SPEC 17).
LOG_LINES = 100
LOG_BYTES = 64 * 1024
# Functions named per queue in the metrics (SPEC 17); the runs of any other count as 'other'.
MAX_FUNCTIONS = 100

# How many due scheduled jobs one take promotes per queue: bounds the cost of a take. Lua's
# own constant (include/take.lua: an argument would cost Redis every call), held to this.
PROMOTE_BATCH = 100
# How long done:<id> outlives a job kept for 0 s, so that waiters already blocked see it.
DONE_GRACE_SECONDS = 10

# Name -> value of every number above that a Lua file declares (as `local NAME = ...`).
SHARED_WITH_LUA = {
    "DEFAULT_PRIORITY": DEFAULT_PRIORITY,
    "MAX_PRIORITY": MAX_PRIORITY,
    "DEFAULT_RESULT_TTL": DEFAULT_RESULT_TTL,
    "DEFAULT_FAILURE_TTL": DEFAULT_FAILURE_TTL,
    "MAX_TTL": MAX_TTL,
    "ENQUEUE_MARK_MS": ENQUEUE_MARK_MS,
    "LOG_LINES": LOG_LINES,
    "LOG_BYTES": LOG_BYTES,
    "MAX_FUNCTIONS": MAX_FUNCTIONS,
    "PROMOTE_BATCH": PROMOTE_BATCH,
    "DONE_GRACE_SECONDS": DONE_GRACE_SECONDS,
}
