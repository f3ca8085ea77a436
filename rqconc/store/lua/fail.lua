--[[ fail: record a failed run, fenced by its claim; either schedule a retry or fail for good.

Whether to retry is decided in Python from the job's Retry policy (it needs the exception's
class hierarchy); this step only receives the due time of the retry, if any. A retry waits
in scheduled:<queue> (never in active) and is promoted by a later take. A final failure
lands in the dead letters, cancels the dependents (unless they allow failure) and creates
the follow-up jobs (on_failure, failure_url).

KEYS[1]          active              leased jobs
KEYS[2]          claims              claim -> job id
KEYS[3]          job:<id>            the job's hash
KEYS[4]          started:<queue>     running jobs of its queue
KEYS[5]          failed:<queue>      dead letters, score = failure time (ms)
KEYS[6]          scheduled:<queue>   delayed and retrying jobs, score = due time (ms)
KEYS[7]          done:<id>           completion list
KEYS[8]          seq                 INCR counter
KEYS[9]          events              the event stream
KEYS[10]         canceling           jobs asked to stop while running
KEYS[11]         failed_expiry:<queue>  when each dead letter's failure_ttl runs out (ms)

ARGV[1]          claim
ARGV[2]          job id
ARGV[3]          exception type (qualified name)
ARGV[4]          exception message
ARGV[5]          traceback text
ARGV[6]          delay of the retry (ms, from now on Redis' clock), or "" when the
                 failure is final
ARGV[7]          namespace prefix "{ns}:"
ARGV[8]          worker name

Returns 1 when failed for good, 2 when scheduled for a retry, -1 when the claim is stale
(nothing written).
]]
--#context NS=ARGV[7] SEQ=KEYS[8] EVENTS=KEYS[9] WORKER=ARGV[8]
--#include clock
--#include metrics
--#include events
--#include jobs
--#include limits
--#include dependents
--#include followups

local claim, id, now = ARGV[1], ARGV[2], tonumber(NOW)
local key, done = KEYS[3], KEYS[7]
if redis.call('HGET', KEYS[2], claim) ~= id or redis.call('HGET', key, 'token') ~= claim then
  return -1
end

redis.call('HDEL', KEYS[2], claim)
redis.call('ZREM', KEYS[1], id)
redis.call('ZREM', KEYS[4], id)
limits_released(id, redis.call('HGET', key, 'queue'))  -- a capped queue may start its next job
redis.call('HDEL', key, 'token')
bump(key, 'attempts')
redis.call('HSET', key, 'exc_type', ARGV[3], 'exc_message', ARGV[4], 'traceback', ARGV[5],
  'ended_at', NOW)
local queue, func, started_at = unpack(redis.call('HMGET', key, 'queue', 'func', 'started_at'))
metric_run_failed(queue, func, metric_elapsed(started_at))

if redis.call('HGET', key, 'cancel_requested') then  -- asked to stop: no retry
  redis.call('SREM', KEYS[10], id)
  mark_canceled(id, key, 'canceled while running')
  settle_dependents(id, false)
  return 1
end

-- A bad delay (only a corrupt caller sends one) fails for good rather than half-apply.
local delay = whole_number(ARGV[6], 0, MAX_TTL * 1000, nil)
if delay then
  local due = string.format('%.0f', now + delay)
  redis.call('HSET', key, 'status', 'scheduled')
  redis.call('ZADD', KEYS[6], due, id)
  emit('retry', id, queue, 'due', due, exception_fields(ARGV[3], ARGV[4]))
  metric_count('retried', queue)
  return 2
end

redis.call('HSET', key, 'status', 'failed')
add_dead_letter(KEYS[5], KEYS[11], now, id, key)
local outcome = cjson.encode({ARGV[3], ARGV[4], ARGV[5]})
redis.call('DEL', done)
redis.call('RPUSH', done, 'failed:' .. outcome)
keep_for_failure_ttl(key, done, id)
emit('failed', id, queue, exception_fields(ARGV[3], ARGV[4]))
metric_failed(queue, func)
settle_dependents(id, false)
spawn_followups(id, key, 'failure', 'parent_exc', outcome)
return 1
