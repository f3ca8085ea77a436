--[[ cron_advance: record that a cron tick's job is enqueued (after the enqueue step).

The leader enqueues the tick's job first (id cron.<cron id>.<tick>; enqueue refuses an id
that exists, so two leaders cannot double a tick), then calls this step. If the entry was
removed or replaced in between, the job just enqueued by this caller belongs to an entry
that no longer exists: it is deleted here, so a removed cron never fires again.

KEYS[1]          crons               cron id -> entry JSON (with its version)
KEYS[2]          cron:last           cron id -> latest enqueued tick (Unix seconds)
KEYS[3]          cron:planned:<id>   the cron's enqueued jobs, score = tick (ms)
KEYS[4]          job:<job id>        the tick's job
KEYS[5]          scheduled:<queue>   where a future tick's job waits
KEYS[6]          q:<queue>           where a due tick's job waits
KEYS[7]          cron:fired          cron id -> how many ticks' jobs were enqueued

ARGV[1]          cron id
ARGV[2]          the entry version the job was made from
ARGV[3]          tick (Unix seconds: an integer, or up to 3 decimals for a fractional interval)
ARGV[4]          "1" when this caller's enqueue created the job, "0" when it existed
ARGV[5]          job id
ARGV[6]          now (ms)
ARGV[7]          how long (ms) a tick's job stays in cron:planned after its tick

Returns 1 when recorded, 0 when the job this caller created must not run (it is deleted
unless it started already): its entry is gone or was replaced, its tick was enqueued
before (the job it had then has ended and expired), or the entry fired its `times` already.
]]
local created, job_id = ARGV[4] == '1', ARGV[5]

-- Take back the job this caller created, unless a worker started it already.
local function undo()
  if created then
    local status = redis.call('HGET', KEYS[4], 'status')
    if status == 'scheduled' or status == 'queued' then
      redis.call('ZREM', KEYS[5], job_id)
      redis.call('ZREM', KEYS[6], job_id)
      redis.call('DEL', KEYS[4])
    end
  end
  return 0
end

local entry = redis.call('HGET', KEYS[1], ARGV[1])
local version, times = nil, nil
if entry then
  local ok, decoded = pcall(cjson.decode, entry)
  if ok and type(decoded) == 'table' then
    version, times = decoded.version, tonumber(decoded.times)
  end
end
if version ~= ARGV[2] then
  return undo()
end
if created and redis.call('ZSCORE', KEYS[3], job_id) then
  -- This tick was enqueued before and its job is gone already (ran with result_ttl=0, or
  -- expired): a leader that read cron:last before that happened enqueued it again.
  return undo()
end
local new = not redis.call('ZSCORE', KEYS[3], job_id)
-- At most `times` ticks fire (SPEC 18), counted here, where each tick is recorded once.
if new and times and (tonumber(redis.call('HGET', KEYS[7], ARGV[1])) or 0) >= times then
  return undo()
end
local tick = tonumber(ARGV[3])
local last = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
if not last or tick > last then
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
redis.call('ZADD', KEYS[3], tick * 1000, job_id)
if new then redis.call('HINCRBY', KEYS[7], ARGV[1], 1) end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', tonumber(ARGV[6]) - tonumber(ARGV[7]))
return 1
