--[[ requeue_front: put a leased job back at the FRONT of its queue, untouched.

Used when a child received a job it may not start (give-back) and for jobs interrupted by a
cold shutdown: this is not a failed attempt, so `attempts` is left alone. The score puts it
ahead of every waiting job of its priority (2^31 - seq instead of 2^31 + seq).

KEYS[1]          seq                 INCR counter
KEYS[2]          active              leased jobs
KEYS[3]          claims              claim -> job id
KEYS[4]          job:<id>            the job's hash
KEYS[5]          q:<queue>           its queue
KEYS[6]          marker:<queue>      its wake-up marker
KEYS[7]          started:<queue>     running jobs of its queue

ARGV[1]          claim
ARGV[2]          job id

Returns 1 when requeued, 0 when the claim is unknown or stale (a no-op).
]]
local claim, id = ARGV[1], ARGV[2]
if redis.call('HGET', KEYS[3], claim) ~= id or redis.call('HGET', KEYS[4], 'token') ~= claim then
  return 0
end

redis.call('HDEL', KEYS[3], claim)
redis.call('ZREM', KEYS[2], id)
redis.call('ZREM', KEYS[7], id)
redis.call('HDEL', KEYS[4], 'token')
redis.call('HSET', KEYS[4], 'status', 'queued')
local priority = tonumber(redis.call('HGET', KEYS[4], 'priority')) or 1
local score = (100 - priority) * 4294967296 + 2147483648 - redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[5], score, id)
redis.call('ZADD', KEYS[6], 0, '0')
return 1
