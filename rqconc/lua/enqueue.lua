--[[ enqueue: store a batch of new jobs of one queue, waiting now or scheduled for later.

One call for a whole batch, so `enqueue_many` is one round trip and all-or-nothing.

KEYS[1]          seq                 INCR counter: FIFO order within a priority
KEYS[2]          queues              set of known queue names
KEYS[3]          q:<queue>           waiting jobs, score = (100 - priority) * 2^32 + 2^31 + seq
KEYS[4]          marker:<queue>      wake-up marker that idle workers BZPOPMIN
KEYS[5]          scheduled:<queue>   delayed jobs, score = due time (ms)
KEYS[4+2i]       job:<id>            the i-th job's hash (i = 1..n)
KEYS[5+2i]       done:<id>           the i-th job's completion list

ARGV[1]          queue name
ARGV[2]          now (ms since the epoch)
ARGV[3]          due time (ms), or "" to wait in the queue at once
ARGV[4]          n, the number of jobs
ARGV[5...]       per job: id, priority, k, then k field/value pairs of its hash

Returns {1, n} when every job was stored,
        {0, id} when a job with that id already exists (then nothing at all is written).
]]
local now, due, n = ARGV[2], ARGV[3], tonumber(ARGV[4])

-- First pass: check every id before writing anything, so a batch is all-or-nothing.
local jobs, pos = {}, 5
for i = 1, n do
  local k = tonumber(ARGV[pos + 2])
  if redis.call('EXISTS', KEYS[4 + 2 * i]) == 1 then
    return {0, ARGV[pos]}
  end
  jobs[i] = {id = ARGV[pos], priority = tonumber(ARGV[pos + 1]), first = pos + 3, k = k}
  pos = pos + 3 + 2 * k
end

redis.call('SADD', KEYS[2], ARGV[1])
for i = 1, n do
  local job, key = jobs[i], KEYS[4 + 2 * i]
  local fields = {}
  for j = job.first, job.first + 2 * job.k - 1 do
    fields[#fields + 1] = ARGV[j]
  end
  -- A reused id must not wake its waiters with an older outcome.
  redis.call('DEL', KEYS[5 + 2 * i])
  redis.call('HSET', key, unpack(fields))
  if due == '' then
    -- A counter, not a clock, orders equal priorities: producers' clocks differ.
    local score = (100 - job.priority) * 4294967296 + 2147483648 + redis.call('INCR', KEYS[1])
    redis.call('ZADD', KEYS[3], score, job.id)
    redis.call('HSET', key, 'status', 'queued', 'enqueued_at', now)
  else
    redis.call('ZADD', KEYS[5], due, job.id)
    redis.call('HSET', key, 'status', 'scheduled')
  end
end
if due == '' then
  redis.call('ZADD', KEYS[4], 0, '0')
end
return {1, n}
