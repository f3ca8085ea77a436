--[[ fail: record a failed run, fenced by its claim; either schedule a retry or fail for good.

Whether to retry is decided in Python from the job's Retry policy (it needs the exception's
class hierarchy); this step only receives the due time of the retry, if any. A retry waits
in scheduled:<queue> (never in active) and is promoted by a later take.

KEYS[1]          active              leased jobs
KEYS[2]          claims              claim -> job id
KEYS[3]          job:<id>            the job's hash
KEYS[4]          started:<queue>     running jobs of its queue
KEYS[5]          failed:<queue>      dead letters, score = failure time (ms)
KEYS[6]          scheduled:<queue>   delayed and retrying jobs, score = due time (ms)
KEYS[7]          done:<id>           completion list

ARGV[1]          claim
ARGV[2]          job id
ARGV[3]          now (ms)
ARGV[4]          exception type (qualified name)
ARGV[5]          exception message
ARGV[6]          traceback text
ARGV[7]          due time of the retry (ms), or "" when the failure is final

Returns 1 when failed for good, 2 when scheduled for a retry, -1 when the claim is stale
(nothing written).
]]
-- Counters are read with tonumber, not HINCRBY: a corrupt field must not break this step.
local function bump(key, field)
  local value = (tonumber(redis.call('HGET', key, field)) or 0) + 1
  redis.call('HSET', key, field, value)
  return value
end

local claim, id, now = ARGV[1], ARGV[2], tonumber(ARGV[3])
if redis.call('HGET', KEYS[2], claim) ~= id or redis.call('HGET', KEYS[3], 'token') ~= claim then
  return -1
end

redis.call('HDEL', KEYS[2], claim)
redis.call('ZREM', KEYS[1], id)
redis.call('ZREM', KEYS[4], id)
redis.call('HDEL', KEYS[3], 'token')
bump(KEYS[3], 'attempts')
redis.call('HSET', KEYS[3], 'exc_type', ARGV[4], 'exc_message', ARGV[5], 'traceback', ARGV[6],
  'ended_at', ARGV[3])

if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[3], 'status', 'scheduled')
  redis.call('ZADD', KEYS[6], ARGV[7], id)
  return 2
end

redis.call('HSET', KEYS[3], 'status', 'failed')
redis.call('ZADD', KEYS[5], now, id)
redis.call('DEL', KEYS[7])
redis.call('RPUSH', KEYS[7], 'failed:' .. cjson.encode({ARGV[4], ARGV[5], ARGV[6]}))
local ttl = tonumber(redis.call('HGET', KEYS[3], 'failure_ttl')) or -1
if ttl > 0 then
  redis.call('EXPIRE', KEYS[3], ttl)
  redis.call('EXPIRE', KEYS[7], ttl)
else
  redis.call('PERSIST', KEYS[3])
end
return 1
