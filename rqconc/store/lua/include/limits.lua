--[[ limits (SPEC 11: limits, pause, groups, expiry; docs/limits.md): included by take, by
the steps that end a run: complete, fail, recover, requeue_front, cancel, and by those that
remove waiting jobs: delete_jobs, drop_parked.

A queue's settings live in flow:<queue>, a hash that a plain queue does not have: one HMGET
is all a plain queue pays per take (SPEC 13). Its fields (written by limit_settings.lua):
  paused             "1" while the queue is paused
  concurrency        most running jobs of the queue, across all workers
  rate, window       most starts in any `window` ms (a sliding window)
  group_concurrency, group_rate, group_window   the same, per group (a job's `flow_group`)

The queue's running jobs are started:<queue>, which every end of a run (finished, failed,
timed out, canceled, cold-interrupted, lease recovered) already leaves: the concurrency
count is released on every end. Those steps call limits_released, which wakes an idle worker
(the queue's marker) and gives a capped group its next job back.

Starts: starts:<queue> and gstarts:<queue>:<group>, sorted sets of start times (ms), one
member per take (its claim), trimmed to the window as they are read.
Groups: grunning:<queue>:<group>, the set of the group's running job ids. A grouped job
popped while its group is at a cap (or while older jobs of its group wait parked) is moved
to parked:<queue>:<group> with its queue score, so a capped group never stands in front of
the others and costs a take nothing after that (each job parks at most once per release).
When one of the group's runs ends (limits_released), or its rate window opens (gtimers:<queue>,
group -> due time, promoted by the take), the group's best parked job goes back into the
queue with its own score: FIFO and priority within a group hold. parkedgroups:<queue>
lists the groups with parked jobs (limit_settings.lua puts them all back when caps change).

Expiry: a job enqueued with ttl carries `expires_at` (ms); popped later than that, it is
canceled with an `expired` event instead of run. Its first start removes the field (a
retry is not an expiry).
]]
--#needs NS
--#include state
--#include keys
--#include gather
--#include jobs
--#include events
--#include dependents

-- The key keeps its first name (flow:<queue>): settings written before the rename hold.
local function flow_key(queue) return NS .. 'flow:' .. queue end

-- A plain job's steps never reach most of this: those functions are cold (build/cold.py),
-- made on first use, so a plain queue pays for flow_key, limits_of and limits_released
-- only, and each step for those of them it calls (build/prune.py). The
-- entries that read started:<queue> (the queue caps count it) first send the writes a
-- step gathered (include/gather.lua).

--#cold
local function starts_key(queue) return NS .. 'starts:' .. queue end
--#cold
local function group_running_key(queue, group) return NS .. 'grunning:' .. queue .. ':' .. group end
--#cold
local function group_starts_key(queue, group) return NS .. 'gstarts:' .. queue .. ':' .. group end
--#cold
local function parked_key(queue, group) return NS .. 'parked:' .. queue .. ':' .. group end
--#cold
local function parked_groups_key(queue) return NS .. 'parkedgroups:' .. queue end
--#cold
local function group_timers_key(queue) return NS .. 'gtimers:' .. queue end

-- The queue's settings as a table, or nil for a plain queue (no limit, not paused).
local function limits_of(queue)
  gathered_flush()  -- an entry: see above
  local v = redis.call('HMGET', flow_key(queue), 'paused', 'concurrency', 'rate', 'window',
    'group_concurrency', 'group_rate', 'group_window')
  if not (v[1] or v[2] or v[3] or v[5] or v[6]) then return nil end
  return {name = queue, paused = v[1] == '1', concurrency = tonumber(v[2]),
    rate = tonumber(v[3]), window = tonumber(v[4]) or 1000,
    group_concurrency = tonumber(v[5]), group_rate = tonumber(v[6]),
    group_window = tonumber(v[7]) or 1000,
    grouped = (v[5] or v[6]) and true or false}
end

-- How long (ms) until the window lets one more start (0: now). The window is closed, so
-- no interval of `window` ms ever holds more than `rate` starts.
--#cold
local function rate_wait(key, rate, window, now)
  if not rate then return 0 end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. (now - window))
  if redis.call('ZCARD', key) < rate then return 0 end
  local oldest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
  return math.max(1, oldest + window + 1 - now)
end

--#cold
local function count_start(key, window, claim, now)
  redis.call('ZADD', key, now, claim)
  redis.call('PEXPIRE', key, window + 1000)
end

-- Whether the queue may start a job now: 0, or the wait in ms (-1: until a run ends or it
-- is resumed, which wakes a worker then).
--#cold
local function queue_wait(limits, started, now)
  gathered_flush()  -- an entry: see above
  if limits.paused then return -1 end
  if limits.concurrency and redis.call('ZCARD', started) >= limits.concurrency then return -1 end
  return rate_wait(starts_key(limits.name), limits.rate, limits.window, now)
end

-- The group's running count, dropping ids no longer running in the queue (a run that
-- ended while the group had no cap, or was deleted): the count heals itself at its cap.
--#cold
local function group_running(limits, group, started)
  local key = group_running_key(limits.name, group)
  local n = redis.call('SCARD', key)
  if n < limits.group_concurrency then return n end
  for _, id in ipairs(redis.call('SMEMBERS', key)) do
    if not redis.call('ZSCORE', started, id) then
      redis.call('SREM', key, id)
      n = n - 1
    end
  end
  return n
end

-- Whether the group may start a job now: 0, or the wait in ms (-1: until a run ends).
--#cold
local function group_wait(limits, group, started, now)
  if limits.group_concurrency and group_running(limits, group, started) >= limits.group_concurrency then
    return -1
  end
  return rate_wait(group_starts_key(limits.name, group), limits.group_rate, limits.group_window, now)
end

-- Put the group's best parked job (still waiting: one canceled meanwhile is dropped) back
-- into the queue with its own score, and wake a worker for it.
--#cold
local function unpark(queue, group)
  local parked = parked_key(queue, group)
  while true do
    local head = redis.call('ZPOPMIN', parked)
    if #head == 0 then
      redis.call('SREM', parked_groups_key(queue), group)
      return
    end
    if redis.call('HGET', job_key(head[1]), 'status') == 'queued' then
      redis.call('ZADD', queue_key(queue), head[2], head[1])
      redis.call('ZADD', marker_key(queue), 0, '0')
      return
    end
  end
end

-- Groups whose rate window opened since: their best parked job goes back to the queue.
--#cold
local function promote_group_timers(limits, now, batch)
  gathered_flush()  -- an entry: see above
  local timers = group_timers_key(limits.name)
  for _, group in ipairs(redis.call('ZRANGEBYSCORE', timers, '-inf', now, 'LIMIT', 0, batch)) do
    redis.call('ZREM', timers, group)
    unpark(limits.name, group)
  end
end

--#cold
local function expire_job(id, key, queue)
  mark_canceled(id, key, 'expired: not started within its ttl')
  emit('expired', id, queue)
  settle_dependents(id, false)
end

-- Whether the popped job (id, score) may start now. A job past its ttl is expired; a job
-- of a group at a cap, or behind parked jobs of its group, is parked. Returns true, or
-- false and the wait (ms) its group needs (-1: none known).
--#cold
local function limits_admit(limits, id, score, key, expires_at, started, now)
  gathered_flush()  -- an entry: see above
  if expires_at and tonumber(expires_at) and now > tonumber(expires_at) then
    expire_job(id, key, redis.call('HGET', key, 'queue'))
    return false, -1
  end
  if not (limits and limits.grouped) then return true end
  local group = redis.call('HGET', key, 'flow_group')
  if not group then return true end
  local parked = parked_key(limits.name, group)
  local head = redis.call('ZRANGE', parked, 0, 0, 'WITHSCORES')
  local wait = -1
  if #head == 0 or tonumber(head[2]) > tonumber(score) then
    wait = group_wait(limits, group, started, now)
    if wait == 0 then return true end
  end
  redis.call('ZADD', parked, score, id)
  redis.call('SADD', parked_groups_key(limits.name), group)
  if wait > 0 then redis.call('ZADD', group_timers_key(limits.name), now + wait, group) end
  return false, wait
end

-- The job was leased under `claim`: count its start against the queue's and group's caps.
--#cold
local function limits_started(limits, id, key, expires_at, claim, started, now)
  gathered_flush()  -- an entry: see above
  if expires_at then redis.call('HDEL', key, 'expires_at') end
  if not limits then return end
  -- complete reads this with the fields it reads anyway: a plain job's completion pays no
  -- call for limits (the rarer ends of a run always call limits_released).
  redis.call('HSET', key, 'flow_taken', '1')
  if limits.rate then count_start(starts_key(limits.name), limits.window, claim, now) end
  if not limits.grouped then return end
  local group = redis.call('HGET', key, 'flow_group')
  if not group then return end
  redis.call('SADD', group_running_key(limits.name, group), id)
  if limits.group_rate then
    count_start(group_starts_key(limits.name, group), limits.group_window, claim, now)
  end
  -- Its group may start more: its next parked job need not wait for a run to end; or its
  -- rate window is full now: the parked ones come back when it opens.
  local wait = group_wait(limits, group, started, now)
  if wait == 0 then
    unpark(limits.name, group)
  elseif wait > 0 and redis.call('EXISTS', parked_key(limits.name, group)) == 1 then
    redis.call('ZADD', group_timers_key(limits.name), now + wait, group)
  end
end

-- A run of job `id` of `queue` ended (its entry in started:<queue> is gone): wake an idle
-- worker for the slot it freed, and give its group its next parked job.
local function limits_released(id, queue)
  gathered_flush()  -- an entry: see above
  local limits = limits_of(queue or 'default')
  if not limits then return end
  -- Only the release that takes the queue below its cap frees a take that was refused
  -- (a worker waiting for a rate window knows its delay; a paused queue waits for resume).
  if limits.concurrency and not limits.paused
      and redis.call('ZCARD', started_key(limits.name)) == limits.concurrency - 1
      and redis.call('ZCARD', queue_key(limits.name)) > 0 then
    redis.call('ZADD', marker_key(limits.name), 0, '0')
  end
  if not limits.grouped then return end
  local group = redis.call('HGET', job_key(id), 'flow_group')
  if group then
    redis.call('SREM', group_running_key(limits.name, group), id)
    unpark(limits.name, group)
  end
end

-- A waiting job leaves the queue other than by a take (canceled, deleted): out of its
-- group's parked jobs too, so counts (queue/counts.py) never show it as waiting, and the
-- group leaves parkedgroups with its last parked job.
--#cold
local function forget_parked(id, key, queue)
  gathered_flush()  -- an entry: see above
  local group = redis.call('HGET', key, 'flow_group')
  if not group then return end
  local parked = parked_key(queue, group)
  if redis.call('ZREM', parked, id) == 1 and redis.call('EXISTS', parked) == 0 then
    redis.call('SREM', parked_groups_key(queue), group)
  end
end
