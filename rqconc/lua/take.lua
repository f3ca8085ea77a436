--[[ take: lease the best waiting job of the first non-empty listened queue.

Before popping, due scheduled jobs of the listened queues are promoted (a bounded batch
per queue, so a take costs the same however many jobs wait). The claim the caller made up
becomes the job's fencing token: every later step about this run must present it.

KEYS[1]          seq                 INCR counter for the scores of promoted jobs
KEYS[2]          active              leased jobs, score = lease deadline (ms)
KEYS[3]          claims              claim -> job id
KEYS[4i]         q:<queue>           for the i-th listened queue (i = 1..n), in take order:
KEYS[4i+1]       marker:<queue>        its wake-up marker,
KEYS[4i+2]       scheduled:<queue>     its delayed jobs,
KEYS[4i+3]       started:<queue>       its running jobs (score = start time, ms)

ARGV[1]          claim (fencing token)
ARGV[2]          now (ms)
ARGV[3]          lease length (ms)
ARGV[4]          worker name
ARGV[5]          how many due scheduled jobs to promote per queue at most
ARGV[6]          job key prefix ("{ns}:job:"): the popped id is only known here, so this is
                 the one key name Lua completes; the prefix itself comes from keys.py

Returns {id, field1, value1, ...}: the taken job's hash, already marked started;
        or, when every listened queue is empty, the earliest due time (ms) of their
        scheduled jobs, or -1 when none is scheduled.
]]
local claim, now, lease_ms = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local batch, prefix = tonumber(ARGV[5]), ARGV[6]
local nq = (#KEYS - 3) / 4

local function promote(queue, marker, scheduled)
  local due = redis.call('ZRANGEBYSCORE', scheduled, '-inf', now, 'LIMIT', 0, batch)
  for _, id in ipairs(due) do
    redis.call('ZREM', scheduled, id)
    local priority = redis.call('HGET', prefix .. id, 'priority')
    if priority then  -- a job deleted meanwhile just leaves the schedule
      local score = (100 - (tonumber(priority) or 1)) * 4294967296 + 2147483648
        + redis.call('INCR', KEYS[1])
      redis.call('ZADD', queue, score, id)
      redis.call('HSET', prefix .. id, 'status', 'queued', 'enqueued_at', ARGV[2])
    end
  end
end

local function take_job(id, started)
  local key = prefix .. id
  local previous = redis.call('HGET', key, 'token')
  if previous then  -- never leave two claims pointing at one job
    redis.call('HDEL', KEYS[3], previous)
  end
  redis.call('HSET', key, 'status', 'started', 'started_at', ARGV[2], 'worker', ARGV[4],
    'token', claim)
  redis.call('HSET', KEYS[3], claim, id)
  redis.call('ZADD', KEYS[2], now + lease_ms, id)
  redis.call('ZADD', started, now, id)
  local fields = redis.call('HGETALL', key)
  table.insert(fields, 1, id)
  return fields
end

for i = 1, nq do
  promote(KEYS[4 * i], KEYS[4 * i + 1], KEYS[4 * i + 2])
end

local taken = nil
for i = 1, nq do
  local queue = KEYS[4 * i]
  while not taken do
    local popped = redis.call('ZPOPMIN', queue)
    if #popped == 0 then break end
    -- An id whose hash is gone (deleted meanwhile) is dropped and the next one tried.
    if redis.call('EXISTS', prefix .. popped[1]) == 1 then
      taken = take_job(popped[1], KEYS[4 * i + 3])
    end
  end
  if taken then break end
end

if taken then
  -- Re-arm the markers of queues that still hold jobs: this wake-up may have consumed
  -- one, and the next idle worker must not sleep while work waits.
  for i = 1, nq do
    if redis.call('ZCARD', KEYS[4 * i]) > 0 then
      redis.call('ZADD', KEYS[4 * i + 1], 0, '0')
    end
  end
  return taken
end

local earliest = -1
for i = 1, nq do
  local first = redis.call('ZRANGE', KEYS[4 * i + 2], 0, 0, 'WITHSCORES')
  if #first > 0 and (earliest < 0 or tonumber(first[2]) < earliest) then
    earliest = tonumber(first[2])
  end
end
return earliest
