--[[ clock (included by every step that reads the time, before the includes that need NOW).

Defines NOW: Redis' clock (ms since the epoch, a string, as ARGV values are). Leases,
deadlines, due times and expiries are set and compared with it, never with a worker's own
clock: a worker whose clock is off must neither lose the leases of its running jobs nor
take the leases of another's (issue 14). Redis 6.2 replicates scripts by their effects
(lua-replicate-commands, default since 5.0), which allows TIME before writes.
]]
--#gives NOW
--#per-call (build/library.py: in the library NOW is set at the start of each call)
local NOW
do
  -- Seconds, then the first three of the six microsecond digits: string operations only
  -- (formatting a number of 13 digits costs Redis more than the TIME call itself).
  -- Nine times in ten the microseconds have their six digits: no padding to make.
  local time = redis.call('TIME')
  local usec = time[2]
  if #usec < 6 then usec = string.rep('0', 6 - #usec) .. usec end
  NOW = time[1] .. string.sub(usec, 1, 3)
end
