--[[ cron_skip: skip a due tick of a skip_if_running entry whose previous job still waits or
runs (SPEC 18), recording the tick and a `skipped` event; or say that it may fire.

The leader calls this before it enqueues such a tick's job (it plans those ticks only once
they are due, not ahead, so "still running" is judged at the tick). The previous job is the
entry's latest enqueued one (the highest tick in cron:planned); a skipped tick enqueues
none, so a job that runs through several ticks skips each of them.

KEYS[1]          crons               cron id -> entry JSON (with its version)
KEYS[2]          cron:last           cron id -> latest handled tick
KEYS[3]          cron:planned:<id>   the cron's enqueued jobs, score = tick (ms)
KEYS[4]          events              the event stream

ARGV[1]          cron id
ARGV[2]          the entry version the caller read
ARGV[3]          tick (as cron:last writes it)
ARGV[4]          the tick's job id (named in the event; no such job is made)
ARGV[5]          queue
ARGV[6]          func
ARGV[7]          namespace prefix "{ns}:"

Returns 1 skipped (recorded, event written), 0 the tick may fire, -1 the entry is gone or
was replaced (nothing written).
]]
--#context NS=ARGV[7] EVENTS=KEYS[4] WORKER=''
--#include clock
--#include events

local entry = redis.call('HGET', KEYS[1], ARGV[1])
local ok, decoded = pcall(cjson.decode, entry or '')
if not (ok and type(decoded) == 'table' and decoded.version == ARGV[2]) then
  return -1
end
local previous = redis.call('ZREVRANGE', KEYS[3], 0, 0)[1]
if not previous then return 0 end
local status = redis.call('HGET', job_key(previous), 'status')
if status ~= 'queued' and status ~= 'scheduled' and status ~= 'deferred'
    and status ~= 'started' then
  return 0
end
local last = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
if not last or tonumber(ARGV[3]) > last then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
know_detail(ARGV[4], false, ARGV[6], '0')
emit('skipped', ARGV[4], ARGV[5], 'cron', ARGV[1], 'running', previous)
return 1
