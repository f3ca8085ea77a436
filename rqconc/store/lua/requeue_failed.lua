--[[ requeue_failed: move a dead letter back to the end of its queue as a fresh job.

Its id is kept; attempts, lost-lease count and the last error are reset, so it gets its
full retry budget again.

KEYS[1]          seq                 INCR counter: FIFO order within a priority
KEYS[2]          failed:<queue>      dead letters
KEYS[3]          job:<id>            the job's hash
KEYS[4]          done:<id>           its completion list (holds the old outcome)
KEYS[5]          events              the event stream
KEYS[6]          failed_expiry:<queue>  when each dead letter's failure_ttl runs out

ARGV[1]          job id
ARGV[2]          namespace prefix "{ns}:"

A unique job (SPEC 11) takes its unique key again, so that the key names the job waiting
with it; while another job holds the key (waiting, scheduled, deferred, running, or ended
within its unique_for, as enqueue_unique.lua decides), the requeue is refused and nothing
is written: two waiting jobs would hold one key.

Returns 1 when requeued, 0 when the id is not a dead letter of this queue (or its data
expired, in which case the stale entry is dropped), {-1, holder, key} when the job's
unique key is held by that other job.
]]
--#context NS=ARGV[2] SEQ=KEYS[1] EVENTS=KEYS[5] WORKER=''
--#include clock
--#include metrics
--#include events
--#include jobs

local id, key = ARGV[1], KEYS[3]
if not redis.call('ZSCORE', KEYS[2], id) then
  return 0
end
local HOLDING = {queued = true, scheduled = true, deferred = true, started = true}
local unique = redis.call('HGET', key, 'unique_key')
local held = unique and NS .. 'unique:' .. unique
local holder = held and redis.call('GET', held)
if holder and holder ~= id then
  local state = redis.call('HMGET', job_key(holder), 'status', 'ended_at', 'unique_for')
  local ended, keep = tonumber(state[2]), tonumber(state[3])
  if HOLDING[state[1]] or (state[1] and ended and keep and ended + keep > tonumber(NOW)) then
    return {-1, holder, unique}
  end
end
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[6], id)
if redis.call('EXISTS', key) == 0 then
  return 0
end
-- Waiters must not see the old failure as the outcome of the new run, nor its page the old
-- run's log lines (a log without its seal would outlive the job: lua/job_log.lua).
redis.call('DEL', KEYS[4], log_key(id))
redis.call('HDEL', key, 'exc_type', 'exc_message', 'traceback', 'ended_at', 'started_at',
  'result', 'token', 'worker')
redis.call('HSET', key, 'attempts', 0, 'lost', 0)
redis.call('PERSIST', key)
-- Waiting again: it holds its unique key again, for as long (no other job holds it).
if held then redis.call('SET', held, id) end
-- A chord's callback runs again with its group's results, kept while it was a dead letter.
local chord_of = redis.call('HGET', key, 'chord_of')
if chord_of and redis.call('HGET', group_key(chord_of), 'results_kept') == '1' then
  redis.call('PERSIST', group_key(chord_of))
end
local queue = redis.call('HGET', key, 'queue')
emit('requeued', id, queue)
push_queued(id, key, false)
metric_count('enqueued', queue)  -- it enters its queue again (rqconc_jobs_enqueued_total)
return 1
