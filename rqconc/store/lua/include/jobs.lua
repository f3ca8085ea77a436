--[[ jobs: a job's state changes shared by the steps (queued, released, a dead letter, its
unique key ended, canceled) and the checks of its stored numbers.
Context: NS, SEQ (the key of the queue's order counter), NOW.
]]
--#needs NS SEQ NOW
--#include keys
--#include events

-- Numbers shared with Python (rqconc/store/defaults.py; a test compares them).
local DEFAULT_PRIORITY = 1
local MAX_PRIORITY = 100
local DEFAULT_RESULT_TTL = 500

-- Counters are read with tonumber, not HINCRBY: a corrupt field must not break a step.
--#cold
local function bump(key, field)
  local value = (tonumber(redis.call('HGET', key, field)) or 0) + 1
  redis.call('HSET', key, field, value)
  return value
end

-- Numeric fields are checked here, not trusted: a corrupt write (say '1.5' or 'nan') must
-- fall back to the default rather than make EXPIRE or ZADD fail halfway through a step
-- (Redis does not roll back the writes a script already made).
local MAX_TTL = 10 * 365 * 24 * 3600

local function whole_number(value, low, high, default)
  local n = tonumber(value)
  if not n or n ~= math.floor(n) or n < low or n > high then return default end
  return n
end

--#cold
local function ttl_of(key, field, default)  -- -1 keeps forever, 0 keeps none
  return whole_number(redis.call('HGET', key, field), -1, MAX_TTL, default)
end

-- Higher priority first; within one, a counter (not a clock: producers' clocks differ)
-- orders jobs, after the waiting ones (back) or before them (front). The layout (keys.py,
-- queue_score, holds the same): priority p owns the band [(100 - p) * 2^46, (101 - p) * 2^46);
-- a job scores the band's middle (+ 2^45) plus the counter n at the back, minus n at the
-- front. With n below 2^45 both stay strictly inside the band, and every score is an
-- integer below 101 * 2^46 < 2^53, exact in a double. The counter reaches 2^45 after 220
-- years at 5,000 jobs/s; past it n is held at 2^45 - 1, so priority still holds (FIFO
-- within a priority then falls back on id order).
local SCORE_BAND, SCORE_MIDDLE, SEQ_LIMIT = 70368744177664, 35184372088832, 35184372088831

-- The score of counter n in the band whose middle is `middle` (score_of's first part: a
-- batch of one priority works it out once).
local function score_in(middle, n, front)
  if n > SEQ_LIMIT then n = SEQ_LIMIT end
  if front then return middle - n end
  return middle + n
end

local function score_of(priority, n, front)
  return score_in((MAX_PRIORITY - whole_number(priority, 0, MAX_PRIORITY, DEFAULT_PRIORITY))
    * SCORE_BAND + SCORE_MIDDLE, n, front)
end

--#cold
local function queue_score(priority, front)
  return score_of(priority, redis.call('INCR', SEQ), front)
end

--#cold
local function push_queued(id, key, front)
  local queue = redis.call('HGET', key, 'queue') or 'default'
  redis.call('ZADD', queue_key(queue), queue_score(redis.call('HGET', key, 'priority'), front),
    id)
  redis.call('ZADD', marker_key(queue), '0', '0')
  redis.call('HSET', key, 'status', 'queued', 'enqueued_at', NOW)
  emit('queued', id, queue)
end

-- A deferred job whose parents are all settled: waits for its due time, if it had one.
--#cold
local function release(id, key)
  redis.call('ZREM', deferred_key(redis.call('HGET', key, 'queue') or 'default'), id)
  local due = tonumber(redis.call('HGET', key, 'due_at'))
  if due and due > tonumber(NOW) then
    local queue = redis.call('HGET', key, 'queue') or 'default'
    redis.call('ZADD', scheduled_key(queue), due, id)
    redis.call('HSET', key, 'status', 'scheduled')
    emit('scheduled', id, queue)
  else
    push_queued(id, key, false)
  end
end

local DEFAULT_FAILURE_TTL = 31536000  -- a year (rqconc/store/defaults.py)

-- Failures within one millisecond (or from a worker whose clock lags) must still requeue in
-- the order they happened: a dead letter's score never goes below the latest one's.
-- The job hash expires by itself after failure_ttl, but the sorted set cannot: `expiries`
-- records when, so readers hide the entry and maintenance (trim_ended) drops it.
--#cold
local function add_dead_letter(failed, expiries, now, id, key)
  local latest = redis.call('ZRANGE', failed, -1, -1, 'WITHSCORES')[2]
  local score = tonumber(now)
  if latest and tonumber(latest) >= score then score = tonumber(latest) + 0.001 end
  redis.call('ZADD', failed, score, id)
  local ttl = ttl_of(key, 'failure_ttl', DEFAULT_FAILURE_TTL)
  if ttl > 0 then
    redis.call('ZADD', expiries, tonumber(now) + ttl * 1000, id)
  else
    redis.call('ZREM', expiries, id)
  end
end

-- unique:<key> names the job holding a unique key (enqueue_unique.lua). Once that job has
-- ended (finished, failed for good, canceled, expired, deleted), the key lives `unique_for`
-- ms more (the hold enqueue_unique honours), or goes at once without one, so a namespace
-- using many keys does not grow for ever. Only while the key still names this job: a
-- later job may hold it already. Callers pass the job's unique_key and unique_for fields as
-- they read them with others (a plain job, without unique_key, pays nothing).
--#cold
local function unique_ended(id, unique_key, unique_for)
  if not unique_key then return end
  local held = NS .. 'unique:' .. unique_key
  if redis.call('GET', held) ~= id then return end
  local keep = whole_number(unique_for, 0, MAX_TTL * 1000, 0)
  if keep > 0 then
    redis.call('PEXPIRE', held, keep)
  else
    redis.call('DEL', held)
  end
end

-- A group's kept results, r1..r<total> (include/groups.lua), go; in chunks unpack() takes.
--#cold
local function drop_group_results(g)
  local n = tonumber(redis.call('HGET', g, 'total')) or 0
  for first = 1, n, 1000 do
    local fields = {}
    for i = first, math.min(first + 999, n) do fields[#fields + 1] = 'r' .. i end
    redis.call('HDEL', g, unpack(fields))
  end
end

-- The chord callback of group `group_id` ended (finished, failed for good, canceled,
-- removed). It read its group's results by reference (fire_chord kept them, marked
-- `results_kept`): they go now and the record expires like a result would. `keep`: the
-- seconds the callback lives on as a dead letter (-1 or 0: for ever), which a requeue runs
-- again with the same results: they are kept as long (requeue_failed keeps them on).
--#cold
local function chord_ended(group_id, keep)
  local g = group_key(group_id)
  if redis.call('HGET', g, 'results_kept') ~= '1' then return end  -- fired by older code
  local ttl = ttl_of(g, 'ttl', DEFAULT_RESULT_TTL)
  if keep then
    if keep <= 0 or ttl < 0 then
      redis.call('PERSIST', g)
    else
      redis.call('EXPIRE', g, math.max(keep, ttl))
    end
    return
  end
  drop_group_results(g)
  redis.call('HDEL', g, 'results_kept')
  if ttl > 0 then redis.call('EXPIRE', g, ttl) else redis.call('PERSIST', g) end
end

-- Every final failure and every cancel ends here: the job's unique key (and a chord
-- callback's group) is read with its failure_ttl, in the same HMGET.
--#cold
local function keep_for_failure_ttl(key, done, id)
  local f = redis.call('HMGET', key, 'failure_ttl', 'unique_key', 'unique_for', 'chord_of')
  local ttl = whole_number(f[1], -1, MAX_TTL, DEFAULT_FAILURE_TTL)
  if ttl > 0 then
    redis.call('EXPIRE', key, ttl)
    redis.call('EXPIRE', done, ttl)
  else
    redis.call('PERSIST', key)
  end
  if f[2] then
    unique_ended(id or string.sub(key, #NS + 5), f[2], f[3])  -- key: NS .. 'job:' .. id
  end
  if f[4] then chord_ended(f[4], ttl) end
end

-- Mark a job canceled and wake its waiters (get() raises JobFailed with JobCanceled).
--#cold
local function mark_canceled(id, key, reason)
  local queue = redis.call('HGET', key, 'queue') or 'default'
  redis.call('ZREM', deferred_key(queue), id)
  redis.call('HDEL', key, 'cancel_requested', 'token')
  redis.call('HSET', key, 'status', 'canceled', 'ended_at', NOW,
    'exc_type', 'rqconc.errors.JobCanceled', 'exc_message', reason, 'traceback', '')
  local done = done_key(id)
  redis.call('DEL', done)
  redis.call('RPUSH', done, 'canceled:')
  keep_for_failure_ttl(key, done, id)
  emit('canceled', id, queue)
end
