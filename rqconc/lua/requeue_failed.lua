--[[ requeue_failed: move a dead letter back to the end of its queue as a fresh job.

Its id is kept; attempts, lost-lease count and the last error are reset, so it gets its
full retry budget again.

KEYS[1]          seq                 INCR counter: FIFO order within a priority
KEYS[2]          failed:<queue>      dead letters
KEYS[3]          q:<queue>           waiting jobs
KEYS[4]          marker:<queue>      wake-up marker
KEYS[5]          job:<id>            the job's hash
KEYS[6]          done:<id>           its completion list (holds the old outcome)

ARGV[1]          job id
ARGV[2]          now (ms since the epoch)

Returns 1 when requeued, 0 when the id is not a dead letter of this queue (or its data
expired, in which case the stale entry is dropped).
]]
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return 0
end
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('EXISTS', KEYS[5]) == 0 then
  return 0
end
local priority = tonumber(redis.call('HGET', KEYS[5], 'priority')) or 1
-- Waiters must not see the old failure as the outcome of the new run.
redis.call('DEL', KEYS[6])
redis.call('HDEL', KEYS[5], 'exc_type', 'exc_message', 'traceback', 'ended_at', 'started_at',
  'result', 'token', 'worker')
redis.call('HSET', KEYS[5], 'status', 'queued', 'attempts', 0, 'lost', 0, 'enqueued_at', ARGV[2])
redis.call('PERSIST', KEYS[5])
local score = (100 - priority) * 4294967296 + 2147483648 + redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[3], score, ARGV[1])
redis.call('ZADD', KEYS[4], 0, '0')
return 1
