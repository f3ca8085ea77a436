--[[ cron_retire: remove a bounded entry that has nothing left to fire (its `times` fired, or
no tick before its `end`), keeping the jobs it enqueued: unlike cron_put's removal, the
last ticks' jobs, planned ahead, still run.

KEYS[1]          crons               cron id -> entry JSON (with its version)
KEYS[2]          cron:last           cron id -> latest enqueued tick
KEYS[3]          cron:fired          cron id -> ticks fired
KEYS[4]          cron:planned:<id>   the cron's enqueued jobs

ARGV[1]          cron id
ARGV[2]          the entry version the caller judged finished
ARGV[3]          how long (ms) cron:planned is kept (a new entry of that id still finds
                 the jobs it lists that have not started)

Returns 1 retired, 0 the entry is gone or was replaced (nothing written).
]]
local entry = redis.call('HGET', KEYS[1], ARGV[1])
local ok, decoded = pcall(cjson.decode, entry or '')
if not (ok and type(decoded) == 'table' and decoded.version == ARGV[2]) then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('PEXPIRE', KEYS[4], ARGV[3])
return 1
