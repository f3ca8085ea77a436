--[[ cron_put: register, replace or remove a cron entry, deleting the jobs it enqueued
ahead of their ticks that have not started yet.

The scheduler enqueues each tick a few seconds early (a scheduled job), so replacing or
removing an entry must take those jobs back, or the old definition would still fire. The
caller reads the entry's version and planned jobs first and passes them (Lua may not build
key names); if either changed meanwhile, nothing is written and the caller reads again.

KEYS[1]          crons               cron id -> entry JSON (with its version)
KEYS[2]          cron:last           cron id -> latest enqueued tick
KEYS[3]          cron:planned:<id>   the cron's enqueued jobs
KEYS[4]          scheduled:<queue>   the current entry's queue (any queue if there is none)
KEYS[5]          q:<queue>
KEYS[6]          cron:fired          cron id -> ticks fired (an entry's `times` bound)
KEYS[6+i]        job:<id>            the i-th planned job (i = 1..n)

ARGV[1]          cron id
ARGV[2]          the current entry's version as read by the caller ("" when none)
ARGV[3]          the new entry JSON, or "" to remove the entry
ARGV[4]          n
ARGV[4+i]        the i-th planned job id

Returns {1, deleted}   done; `deleted` jobs that had not started were deleted,
        {0, 0}         removal of an entry that does not exist (nothing written),
        {-1, 0}        the entry or its planned jobs changed since the caller read them.
]]
local current = redis.call('HGET', KEYS[1], ARGV[1])
local version = ''
if current then  -- an unreadable entry has no version: it can still be removed or replaced
  local ok, entry = pcall(cjson.decode, current)
  version = ok and type(entry) == 'table' and entry.version or ''
end
if version ~= ARGV[2] then
  return {-1, 0}
end
if not current and ARGV[3] == '' then
  return {0, 0}
end
local n = tonumber(ARGV[4])
if redis.call('ZCARD', KEYS[3]) ~= n then
  return {-1, 0}
end
for i = 1, n do
  if not redis.call('ZSCORE', KEYS[3], ARGV[4 + i]) then
    return {-1, 0}
  end
end

local deleted = 0
for i = 1, n do
  local status = redis.call('HGET', KEYS[6 + i], 'status')
  if status == 'scheduled' or status == 'queued' then
    redis.call('ZREM', KEYS[4], ARGV[4 + i])
    redis.call('ZREM', KEYS[5], ARGV[4 + i])
    redis.call('DEL', KEYS[6 + i])
    deleted = deleted + 1
  end
end
redis.call('DEL', KEYS[3])
-- A new definition starts from its registration time, not from the old one's last tick.
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1])
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
end
return {1, deleted}
