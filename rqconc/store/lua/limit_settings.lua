--[[ limit_settings: change a queue's limits (limits, group limits, pause; SPEC 11).

The fields are those of flow:<queue> (include/limits.lua). Caps may have risen or gone: every
parked job of the queue's groups goes back into the queue with its own score (a take parks
again whatever still has to wait), and an idle worker is woken to look.

KEYS[1]          flow:<queue>          the queue's settings
KEYS[2]          q:<queue>             its waiting jobs
KEYS[3]          marker:<queue>        its wake-up marker
KEYS[4]          parkedgroups:<queue>  its groups with parked jobs
KEYS[5]          gtimers:<queue>       when each rate-capped group may start again

ARGV[1]          namespace prefix "{ns}:" (parked:<queue>:<group> is completed from it)
ARGV[2]          queue name
ARGV[3...]       field/value pairs: a value sets the field, "" removes it

Returns the number of parked jobs put back.
]]
local NS, queue = ARGV[1], ARGV[2]
for i = 3, #ARGV, 2 do
  if ARGV[i + 1] == '' then
    redis.call('HDEL', KEYS[1], ARGV[i])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end

-- Scores are queue scores: put back with them, FIFO and priority order hold across both.
-- A parked job canceled meanwhile (no longer `queued`) is dropped, as unpark does.
local back = 0
for _, group in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  local parked = NS .. 'parked:' .. queue .. ':' .. group
  local entries = redis.call('ZRANGE', parked, 0, -1, 'WITHSCORES')
  for i = 1, #entries, 2 do
    if redis.call('HGET', NS .. 'job:' .. entries[i], 'status') == 'queued' then
      redis.call('ZADD', KEYS[2], entries[i + 1], entries[i])
      back = back + 1
    end
  end
  redis.call('DEL', parked)
end
redis.call('DEL', KEYS[4], KEYS[5])
if redis.call('ZCARD', KEYS[2]) > 0 then
  redis.call('ZADD', KEYS[3], 0, '0')
end
return back
