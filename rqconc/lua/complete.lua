--[[ complete: record a job's return value, fenced by the claim of its run.

A worker whose lease was lost (the job was recovered and may run elsewhere) presents a
stale claim and gets -1: it must drop its result, so a job is never completed twice.
Waiters of job.get() block on done:<id>; the outcome is pushed there once, in this step.

KEYS[1]          active              leased jobs
KEYS[2]          claims              claim -> job id
KEYS[3]          job:<id>            the job's hash
KEYS[4]          started:<queue>     running jobs of its queue
KEYS[5]          finished:<queue>    finished jobs, score = expiry time (ms; +inf: kept forever)
KEYS[6]          done:<id>           completion list

ARGV[1]          claim
ARGV[2]          job id
ARGV[3]          now (ms)
ARGV[4]          the serialized return value
ARGV[5]          the serializer's name ("json" or "pickle")
ARGV[6]          seconds done:<id> lives when result_ttl is 0 (so current waiters see it)

Returns 1 when recorded, -1 when the claim is stale (nothing written).
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
redis.call('HSET', KEYS[3], 'status', 'finished', 'ended_at', ARGV[3])
-- Entries are scored by expiry, so trimming the expired ones costs O(log n + trimmed).
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)

redis.call('DEL', KEYS[6])
redis.call('RPUSH', KEYS[6], 'finished:' .. ARGV[5] .. ':' .. ARGV[4])

local ttl = tonumber(redis.call('HGET', KEYS[3], 'result_ttl')) or 500
if ttl == 0 then
  -- Keep nothing: the waiters already blocked get the outcome from done:<id>.
  redis.call('DEL', KEYS[3])
  redis.call('EXPIRE', KEYS[6], ARGV[6])
elseif ttl < 0 then
  redis.call('HSET', KEYS[3], 'result', ARGV[4])
  redis.call('PERSIST', KEYS[3])
  redis.call('ZADD', KEYS[5], '+inf', id)
else
  redis.call('HSET', KEYS[3], 'result', ARGV[4])
  redis.call('EXPIRE', KEYS[3], ttl)
  redis.call('EXPIRE', KEYS[6], ttl)
  redis.call('ZADD', KEYS[5], now + ttl * 1000, id)
end
return 1
