--[[ flow_settings: change a queue's flow settings (limits, group limits, pause; SPEC 11).

The fields are those of flow:<queue> (include/flow.lua). Caps may have risen or gone: every
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

local back = 0
for _, group in ipairs(redis.call('SMEMBERS', KEYS[4])) do
  local parked = NS .. 'parked:' .. queue .. ':' .. group
  back = back + redis.call('ZCARD', parked)
  -- Scores are queue scores: the union keeps FIFO and priority order across both.
  redis.call('ZUNIONSTORE', KEYS[2], 2, KEYS[2], parked, 'AGGREGATE', 'MIN')
  redis.call('DEL', parked)
end
redis.call('DEL', KEYS[4], KEYS[5])
if redis.call('ZCARD', KEYS[2]) > 0 then
  redis.call('ZADD', KEYS[3], 0, '0')
end
return back
