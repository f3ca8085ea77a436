--[[ trim_ended: drop the entries of ended jobs that have expired from their queues' sets.

Maintenance, run by one supervisor per interval (RedisSource.maintain), off the per-job
path. complete trims finished:<queue> only when another job of that queue completes, and a
dead letter's hash expires (failure_ttl) without touching failed:<queue>: on a queue that
goes quiet both would keep their expired ids forever. Readers already hide those (they
compare the expiry with now), so this only bounds memory; at most ARGV[1] entries per set
and call keep one pass short after a long quiet spell.

KEYS[1]          finished:<queue>       the first queue's finished jobs, score = expiry
                                        time (ms; +inf: kept forever)
KEYS[2]          failed:<queue>         its dead letters, score = failure time (ms)
KEYS[3]          failed_expiry:<queue>  when each of them expires (ms)
KEYS[3i-2..3i]   the same three for the i-th queue (i = 1..n)

ARGV[1]          the most entries dropped per set

Returns how many entries were dropped in all (a dead letter counts once).
]]
--#include clock
local now, limit = NOW, tonumber(ARGV[1])
local dropped = 0

local function expired(key)
  return redis.call('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', 0, limit)
end

for i = 1, #KEYS, 3 do
  local finished = expired(KEYS[i])
  if #finished > 0 then
    dropped = dropped + redis.call('ZREM', KEYS[i], unpack(finished))
  end
  local dead = expired(KEYS[i + 2])
  if #dead > 0 then
    redis.call('ZREM', KEYS[i + 1], unpack(dead))
    dropped = dropped + redis.call('ZREM', KEYS[i + 2], unpack(dead))
  end
end
return dropped
