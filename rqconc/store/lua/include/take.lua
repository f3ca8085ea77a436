--[[ take: take_next, the lease of a waiting job (the take steps and complete's fused take).

take_next(claim, lease_ms, active, claims, first, nq, rearm): promote due scheduled jobs
(PROMOTE_BATCH at most per queue) of the nq listened queues, then lease the best waiting
job of the first non-empty one.
The queues' keys are KEYS[first .. first + 4nq - 1], four per queue in take order:
q:<queue>, marker:<queue>, scheduled:<queue>, started:<queue>.
`rearm`: this take may have consumed a wake-up of the queues' markers (a child that blocked
on them), so markers of queues that still hold jobs are set again for the next idle child.
A take chained onto a completion consumed none and skips that.

A cron tick's job planned ahead (id cron.<cron id>.<tick>, see queue/cron.py) carries
`stale_at` (ms): when a later tick of its cron is due (plus a grace). If no worker promoted
it before then (every worker was down), a later tick supersedes it and it is canceled
instead, so that only the latest missed tick fires (SPEC 7). Other jobs pay a string
compare for this.

Returns the taken job as {id, v1, v2, ...}: the values of TAKE_FIELDS in order (false, i.e.
nil in the reply, where a field is absent; a lean job's reply ends after the first nine, the
fields every job may have), already started and leased under `claim`; or,
when every listened queue is empty, how long (ms, >= 0) until the earliest of their
scheduled jobs is due by Redis' clock (NOW), or -1 when none is scheduled. A delay, not a
due time: a worker whose own clock is off would wait the wrong time for it (issue 14).
Context: NS, WORKER (the taking worker's name), NOW.
]]
--#needs NS WORKER NOW
--#include state
--#include keys
--#include metrics
--#include gather
--#include events
--#include jobs
--#include limits

-- What a worker needs to run a job, TAKE_FIELDS, in the order of scripts.TAKE_FIELDS (a test
-- compares them): the fields of read()'s first HMGET between 'token' and 'enqueued_at',
-- then those of its second. An HMGET of these, not HGETALL: a job hash holds twice as many
-- fields the worker never reads. Written out in the calls, not kept in a table: a table
-- would be built on every call of the step (issue 21). Their positions in TAKE_FIELDS:
local TAKE_FUNC = 1
local TAKE_QUEUE = 6
local TAKE_ATTEMPTS = 7
local TAKE_EVENT_DETAIL = 9
local TAKE_EXPIRES_AT = 16
-- Jobs one take may expire or park (include/limits.lua) before it answers "take again now":
-- bounds the time one take holds Redis.
local LIMIT_SKIPS = 500
local CRON_JOB_PREFIX = 'cron.'  -- queue/cron.py tick_job_id
-- How many due scheduled jobs one take promotes per queue: a constant of every step that
-- takes, not an argument (an argument costs every call ~1,150 Redis instructions; the
-- numbers test holds it to rqconc/store/defaults.py). As text too: ZRANGEBYSCORE's LIMIT,
-- and a number would be formatted on every call.
local PROMOTE_BATCH = 100
local PROMOTE_BATCH_TEXT = '100'

-- Whether this step promoted its queues' due jobs already: NOW does not move within a step,
-- so the later takes of complete_many and take_many find nothing more due (one
-- ZRANGEBYSCORE per queue and step, not per job): PROMOTED.

-- True once a step found, with one EXISTS for all the claims it takes for and all its
-- listened queues, no revoked claim and no limits: its takes then skip their own
-- EXISTS (nothing in a step creates either). The listened queues' q:<queue> keys are at
-- KEYS[first], every 4th. `also`: more keys the step wants to know about in the same call
-- (the dependents:<id> of the jobs it completes); when the count is not 0, asking `also`
-- again tells which part it was (takes_told).
-- TAKES_FREE holds the answer. LIMITED: true once the step knows that its one
-- take's claim is revoked or a listened queue has limits (take_next then skips straight to
-- the revoked check).
local function takes_clear(claims_taking, first, nq, also)
  local asked = {unpack(also or {})}
  for _, claim in ipairs(claims_taking) do asked[#asked + 1] = NS .. 'revoked:' .. claim end
  for i = 1, nq do
    asked[#asked + 1] = flow_key(string.sub(KEYS[first + 4 * (i - 1)], #NS + 3))
  end
  local found = redis.call('EXISTS', unpack(asked))
  TAKES_FREE = found == 0
  return found
end

-- takes_clear for one claim and one more key (`also`), the fused step's case: the same EXISTS,
-- without the tables the general one builds (bench/PROFILE.md, section 15).
local function takes_clear_one(claim, first, nq, also)
  if nq ~= 1 then return takes_clear({claim}, first, nq, {also}) end
  local found = redis.call('EXISTS', also, NS .. 'revoked:' .. claim,
    flow_key(string.sub(KEYS[first], #NS + 3)))
  TAKES_FREE = found == 0
  return found
end

-- After takes_clear counted `found` > 0 keys with `also`: how many of `also` exist (one
-- EXISTS), so the takes know whether the rest was clear. Returns that count.
local function takes_told(found, also, one_take)
  local among = redis.call('EXISTS', unpack(also))
  TAKES_FREE = among == found
  LIMITED = one_take and among < found
  return among
end

-- take_next's helpers are functions of the include, not closures made inside it: a closure is
-- made again on every call (every job), with each upvalue it names looked up then, where a
-- library makes these once per load (build/library.py).

-- Promote the due jobs of one scheduled:<queue> (PROMOTE_BATCH at most) into their queues.
local function promote_due(scheduled, now)
  local due = redis.call('ZRANGEBYSCORE', scheduled, '-inf', NOW, 'LIMIT', '0',
    PROMOTE_BATCH_TEXT)
  for _, id in ipairs(due) do
    redis.call('ZREM', scheduled, id)
    local key = job_key(id)
    if redis.call('EXISTS', key) == 1 then  -- a job deleted meanwhile just leaves
      local stale_at = string.sub(id, 1, 5) == CRON_JOB_PREFIX
        and tonumber(redis.call('HGET', key, 'stale_at'))
      if stale_at and now >= stale_at then
        mark_canceled(id, key, 'a later tick of its cron is due: only the latest missed '
          .. 'tick fires')
      else
        push_queued(id, key, false)
      end
    end
  end
end

-- The popped job's previous token and TAKE_FIELDS, and its enqueued_at (for the
-- wait-time metric, include/metrics); nil when its hash is gone. The fields only callbacks,
-- chords and jobs with a ttl have are read by a second HMGET, and only for a job that is
-- not `lean` (steps.py marks the jobs enqueued without any of them): each field an HMGET
-- asks for costs Redis about 2,000 instructions, found or not (issue 21).
local function read_popped(key)
  local values = redis.call('HMGET', key, 'token', 'func', 'args', 'kwargs', 'serializer',
    'timeout', 'queue', 'attempts', 'retry', 'event_detail', 'enqueued_at', 'lean')
  local enqueued_at = values[11]
  if values[12] == '1' then
    -- Lean (so the hash exists): none of the rare fields, and the reply ends before them
    -- (a Lua array ends at its first nil; scripts.taken reads the fields not sent as
    -- absent). Not growing the table to 19 values, nor sending 9 nils, saves Redis
    -- ~7,000 instructions a take (bench/PROFILE.md, section 15).
    values[12], values[11] = nil, nil
    return values, enqueued_at
  end
  local rare = redis.call('HMGET', key, 'callback_of', 'callback_kind', 'parent_serializer',
    'parent_result', 'parent_exc', 'chord_results', 'expires_at', 'chord_of', 'soft_timeout')
  for i = 1, 9 do values[10 + i] = rare[i] end
  for i = 1, 19 do
    if values[i] then return values, enqueued_at end
  end
  -- Every field missing: deleted meanwhile, or a corrupt hash without any of them.
  if redis.call('EXISTS', key) == 1 then return values, enqueued_at end
  return nil
end

-- Start job `id` under `claim`: its hash, the claims, active (the lease) and started:<queue>
-- registries, its `started` event and wait metric. Returns the reply's values and the
-- job's expires_at.
local function lease_popped(claim, lease_ms, active, claims, now, id, key, values,
    enqueued_at, started)
  local expires_at = values[TAKE_EXPIRES_AT + 1]
  if values[1] then  -- never leave two claims pointing at one job
    registry_write('HDEL', claims, values[1])
  end
  redis.call('HSET', key, 'status', 'started', 'started_at', NOW, 'worker', WORKER,
    'token', claim)
  registry_write('HSET', claims, claim, id)
  registry_write('ZADD', active, now + lease_ms, id)
  registry_write('ZADD', started, NOW, id)
  emit_detailed('started', id, values[TAKE_QUEUE + 1], values[TAKE_EVENT_DETAIL + 1] or false,
    values[TAKE_FUNC + 1] or '', values[TAKE_ATTEMPTS + 1])
  metric_started(values[TAKE_QUEUE + 1], enqueued_at)
  values[1] = id
  if expires_at then values[TAKE_EXPIRES_AT + 1] = false end  -- a lean job's ends before
  return values, expires_at
end

-- q, marker, scheduled, started of the i-th listened queue (keys from KEYS[first]).
local function queue_keys(first, i)
  local base = first + 4 * (i - 1)
  return KEYS[base], KEYS[base + 1], KEYS[base + 2], KEYS[base + 3]
end

-- Limits (include/limits.lua): the earliest moment (ms) a capped queue or group may start
-- again, `due` (-1: none yet) moved earlier by a wait of `wait` ms from now.
local function earlier_due(due, now, wait)
  if wait > 0 and (due < 0 or now + wait < due) then return now + wait end
  return due
end

local function take_next(claim, lease_ms, active, claims, first, nq, rearm)
  local now = now_ms()
  -- The claim's child was ended (its claims requeued) while this take was on its way; and
  -- which listened queues have limits (include/limits.lua). One EXISTS asks both: a
  -- plain queue pays no call of its own for limits (SPEC 13).
  local limited = LIMITED
  if not TAKES_FREE then
    local revoked = NS .. 'revoked:' .. claim
    if not limited then
      local asked = {revoked}
      for i = 1, nq do
        asked[i + 1] = flow_key(string.sub(KEYS[first + 4 * (i - 1)], #NS + 3))
      end
      limited = redis.call('EXISTS', unpack(asked)) > 0
    end
    if limited and redis.call('EXISTS', revoked) == 1 then return -1 end
  end

  -- limit_due: the earliest moment a capped queue or group may start again (earlier_due).
  -- queue_limits[i]: the i-th queue's limits; queue_limits is false when no listened queue
  -- has any (a table made per take costs Redis ~1,500 instructions, bench/PROFILE.md 15).
  local limit_due, skips, queue_limits = -1, 0, limited and {}
  for i = 1, nq do
    local queue, _, scheduled = queue_keys(first, i)
    if not PROMOTED then promote_due(scheduled, now) end
    if limited then
      local limits = limits_of(string.sub(queue, #NS + 3))
      queue_limits[i] = limits
      if limits and limits.grouped then promote_group_timers(limits, now, PROMOTE_BATCH_TEXT) end
    end
  end

  PROMOTED = true
  local taken = nil
  for i = 1, nq do
    local queue, _, _, started = queue_keys(first, i)
    local limits = queue_limits and queue_limits[i]
    local open = true
    if limits then
      local wait = queue_wait(limits, started, now)
      limit_due = earlier_due(limit_due, now, wait)
      open = wait == 0
    end
    while open and not taken and skips < LIMIT_SKIPS do
      local popped = redis.call('ZPOPMIN', queue)
      if #popped == 0 then break end
      -- An id whose hash is gone (deleted meanwhile) is dropped and the next one tried.
      local key = job_key(popped[1])
      local values, enqueued_at = read_popped(key)
      if values then
        local admitted, wait = true, -1
        if limits or values[TAKE_EXPIRES_AT + 1] then
          admitted, wait = limits_admit(limits, popped[1], popped[2], key,
            values[TAKE_EXPIRES_AT + 1], started, now)
        end
        if admitted then
          local expires_at
          taken, expires_at = lease_popped(claim, lease_ms, active, claims, now, popped[1],
            key, values, enqueued_at, started)
          if limits or expires_at then
            limits_started(limits, popped[1], key, expires_at, claim, started, now)
          end
        else
          skips = skips + 1
          limit_due = earlier_due(limit_due, now, wait)
        end
      end
    end
    if taken then break end
  end

  if taken then
    if rearm then
      for i = 1, nq do
        local queue, marker, _, started = queue_keys(first, i)
        -- A capped queue's marker is set again by the step that frees it (limits_released).
        if redis.call('ZCARD', queue) > 0
            and (not queue_limits or not queue_limits[i]
              or queue_wait(queue_limits[i], started, now) == 0) then
          redis.call('ZADD', marker, '0', '0')
        end
      end
    end
    return taken
  end
  if skips >= LIMIT_SKIPS then return 0 end  -- more to look at: take again at once

  local earliest = limit_due
  for i = 1, nq do
    local _, _, scheduled = queue_keys(first, i)
    local head = redis.call('ZRANGE', scheduled, 0, 0, 'WITHSCORES')
    if #head > 0 and (earliest < 0 or tonumber(head[2]) < earliest) then
      earliest = tonumber(head[2])
    end
  end
  if earliest < 0 then return -1 end
  return math.max(0, earliest - now)
end
