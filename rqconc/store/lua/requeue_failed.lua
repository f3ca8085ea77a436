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

Returns 1 when requeued, 0 when the id is not a dead letter of this queue (or its data
expired, in which case the stale entry is dropped).
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
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[6], id)
if redis.call('EXISTS', key) == 0 then
  return 0
end
-- Waiters must not see the old failure as the outcome of the new run.
redis.call('DEL', KEYS[4])
redis.call('HDEL', key, 'exc_type', 'exc_message', 'traceback', 'ended_at', 'started_at',
  'result', 'token', 'worker')
redis.call('HSET', key, 'attempts', 0, 'lost', 0)
redis.call('PERSIST', key)
-- Waiting again: it holds its unique key again for as long, if no other job took it over.
local unique = redis.call('HGET', key, 'unique_key')
if unique and redis.call('GET', NS .. 'unique:' .. unique) == id then
  redis.call('PERSIST', NS .. 'unique:' .. unique)
end
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
