--[[ lifecycle (included by the steps that move jobs between states; see scripts.py).

The including script defines these locals, before `--#include lifecycle`:
  NS       the namespace prefix "{ns}:" (ARGV): the hash tag of every key below
  SEQ      KEYS entry of the seq counter
  EVENTS   KEYS entry of the event stream
  NOW      now (ms, a string): Redis' clock, from `--#include clock` (enqueue alone
           passes the producer's, for created_at)
  WORKER   the acting worker's name, or ""

Steps that end a job must release or cancel its dependents and create its follow-up jobs
(callbacks, webhooks), and those job ids are only known here. So these functions complete
key names from NS; the patterns mirror rqconc/keys.py (KeySpace) and share its hash tag,
so every key stays in one cluster slot. tests/queue/test_lua_steps.py
(test_key_names_built_inside_lua_match_keyspace) checks that they agree.
]]
--#include metrics
--#include gather

-- Numbers shared with Python (rqconc/store/defaults.py; a test compares them).
local EVENTS_MAXLEN = 10000
-- Numbers that Redis receives as arguments are sent as text: a Lua number given to
-- redis.call is formatted with snprintf on each call (Redis 6.2 and 7.0; ~2,500 instructions,
-- bench/step_cost.py), a string is passed as it is. tests/queue/test_build/prune.py checks
-- that each *_TEXT equals its number.
local EVENTS_MAXLEN_TEXT = '10000'
local DEFAULT_PRIORITY = 1
local MAX_PRIORITY = 100
local DEFAULT_RESULT_TTL = 500

local function job_key(id) return NS .. 'job:' .. id end
local function queue_key(name) return NS .. 'q:' .. name end
local function marker_key(name) return NS .. 'marker:' .. name end
local function scheduled_key(name) return NS .. 'scheduled:' .. name end
local function started_key(name) return NS .. 'started:' .. name end
local function deferred_key(name) return NS .. 'deferred:' .. name end
local function done_key(id) return NS .. 'done:' .. id end
local function dependents_key(id) return NS .. 'dependents:' .. id end
--#cold
local function group_key(id) return NS .. 'group:' .. id end

-- Counters are read with tonumber, not HINCRBY: a corrupt field must not break a step.
--#cold
local function bump(key, field)
  local value = (tonumber(redis.call('HGET', key, field)) or 0) + 1
  redis.call('HSET', key, field, value)
  return value
end

-- Every event carries the job's `func` and `attempt` (SPEC 10): the 1-based number of the
-- execution it is about: for failed and retry the run that just ended (their steps count it
-- before they emit), for the others the current or next one (stored count + 1).
-- The fields a job of a queue with event_detail="full" adds to its events (SPEC 14): its
-- call, its result (`result`, given by complete), the host (the acting worker's, from its
-- registry entry; the producer's for client-side steps) and meta.log_tag.
-- A step that has read a job's event_detail, func and attempts already (take, complete,
-- enqueue: every job pays for those) says so with know_detail, so that a plain job's events
-- cost no extra command there; elsewhere a job pays one HMGET per event.
local KNOWN_DETAIL = {}
local RUN_ENDED = {failed = true, retry = true}
local EXC_MESSAGE_MAX = 1000  -- bytes of an exception message an event keeps

-- func and attempts may be omitted (nil): the events then read them.
local function know_detail(id, detail, func, attempts)
  KNOWN_DETAIL[id] = {detail or false, func, attempts}
end

-- {detail, func, attempts} of a job. What is read is not kept: a step may count an attempt
-- between two events of one job.
local function known_of(id)
  local known = KNOWN_DETAIL[id]
  if known == nil or known[2] == nil then
    local f = redis.call('HMGET', job_key(id), 'event_detail', 'func', 'attempts')
    return {f[1] or false, f[2] or '', f[3]}
  end
  return known
end

--#cold
local function detail_of(event, id, result, detail)
  if detail ~= 'full' then return {} end
  local f = redis.call('HMGET', job_key(id), 'args', 'kwargs', 'meta', 'origin_host')
  local host = f[4]
  if WORKER ~= '' then host = redis.call('HGET', NS .. 'worker:' .. WORKER, 'host') or '' end
  local detail = {'args', f[1] or '[]', 'kwargs', f[2] or '{}', 'host', host or ''}
  if result then
    detail[#detail + 1], detail[#detail + 2] = 'result', result
  end
  -- meta is JSON written by Python; a corrupt one just has no log_tag.
  local ok, meta = pcall(cjson.decode, f[3] or '{}')
  local tag = ok and type(meta) == 'table' and meta['log_tag']
  if type(tag) == 'string' or type(tag) == 'number' then
    detail[#detail + 1], detail[#detail + 2] = 'log_tag', tostring(tag)
  end
  return detail
end

-- One entry of the capped event stream per transition, in the step that makes it; except
-- that the step completing a job and taking the next (complete with a next claim) writes its
-- `finished` and `started` as one entry: the second event's fields follow the first's, each
-- name prefixed with '+', and share its ts and worker (rqconc/queue/events.py splits them).
-- One XADD less per job (issue 21). hold_events makes the next event wait for the one
-- after it: a `started` joins it, any other event writes it first (order is kept), and
-- flush_events writes what is still held.
local HELD = nil  -- false: hold the next event; a table: the held event's fields
local function hold_events() HELD = false end

local function xadd(fields)
  redis.call('XADD', EVENTS, 'MAXLEN', '~', EVENTS_MAXLEN_TEXT, '*', unpack(fields))
end

local function flush_events()
  if HELD then xadd(HELD) end
  HELD = nil
end

local function emit_with(event, id, queue, result, ...)
  local known = known_of(id)
  local attempt = tonumber(known[3]) or 0
  if not RUN_ENDED[event] then attempt = attempt + 1 end
  if attempt == 1 then attempt = '1' end  -- most events: as text (see EVENTS_MAXLEN_TEXT)
  if HELD and event == 'started' and known[1] ~= 'full' then
    local fields, n = HELD, #HELD
    HELD = nil
    fields[n + 1], fields[n + 2], fields[n + 3], fields[n + 4] = '+event', event, '+job_id', id
    fields[n + 5], fields[n + 6], fields[n + 7], fields[n + 8] = '+queue', queue or '',
      '+attempt', attempt
    fields[n + 9], fields[n + 10] = '+func', known[2]
    xadd(fields)
    return
  end
  local fields = {'event', event, 'job_id', id, 'queue', queue or '', 'ts', NOW,
    'worker', WORKER, 'attempt', attempt, 'func', known[2], ...}
  if known[1] == 'full' then  -- most queues: no detail, and no table made for none
    for _, value in ipairs(detail_of(event, id, result, known[1])) do
      fields[#fields + 1] = value
    end
  end
  if HELD == false then
    HELD = fields
    return
  end
  flush_events()
  xadd(fields)
end

-- The fields failed and retry events add: the exception's type and (the start of) its message.
--#cold
local function exception_fields(exc_type, message)
  return 'exc_type', exc_type, 'exc_message', string.sub(message or '', 1, EXC_MESSAGE_MAX)
end

local function emit(event, id, queue, ...)
  emit_with(event, id, queue, nil, ...)
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

local function score_of(priority, n, front)
  local middle = (MAX_PRIORITY - whole_number(priority, 0, MAX_PRIORITY, DEFAULT_PRIORITY))
    * SCORE_BAND + SCORE_MIDDLE
  if n > SEQ_LIMIT then n = SEQ_LIMIT end
  if front then return middle - n end
  return middle + n
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

-- Every final failure and every cancel ends here: the job's unique key is read with its
-- failure_ttl, in the same HMGET.
--#cold
local function keep_for_failure_ttl(key, done, id)
  local f = redis.call('HMGET', key, 'failure_ttl', 'unique_key', 'unique_for')
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

-- Groups (queue/groups.py): group:<id> holds the member ids in order (`jobs`), how many have
-- not finished (`pending`), `state` (running, done, failed), the chord callback's id
-- (`chord_id`; that job waits `deferred`, with `chord_of`) and, per member index i, `r<i>`:
-- its serialized result (a chord's) or "" once it finished.

-- The group ended: the kept results go, and its record expires like a result would.
--#cold
local function end_group(g, state)
  redis.call('HSET', g, 'state', state)
  local n = tonumber(redis.call('HGET', g, 'total')) or 0
  for first = 1, n, 1000 do
    local fields = {}
    for i = first, math.min(first + 999, n) do fields[#fields + 1] = 'r' .. i end
    redis.call('HDEL', g, unpack(fields))
  end
  local ttl = ttl_of(g, 'ttl', DEFAULT_RESULT_TTL)
  if ttl > 0 then redis.call('EXPIRE', g, ttl) end
end

-- The chord callback of a finished group, with the members' results in group order.
--#cold
local function fire_chord(g, chord, n)
  local key = job_key(chord)
  if redis.call('HGET', key, 'status') ~= 'deferred' then return end  -- canceled by a user
  local results = {}
  for first = 1, n, 1000 do
    local fields = {}
    for i = first, math.min(first + 999, n) do fields[#fields + 1] = 'r' .. i end
    for _, value in ipairs(redis.call('HMGET', g, unpack(fields))) do
      results[#results + 1] = value
    end
  end
  redis.call('ZREM', deferred_key(redis.call('HGET', key, 'queue') or 'default'), chord)
  redis.call('HSET', key, 'chord_results', cjson.encode(results))
  push_queued(chord, key, false)
end

-- Member `index` of group `group_id` finished for good (complete). HSETNX counts each
-- member once, whatever runs twice; the step that finishes the last one fires the chord.
-- A retry or a lease recovery is no end: only this step and a final failure settle.
--#cold
local function group_member_finished(group_id, index, result)
  local g = group_key(group_id)
  if redis.call('HGET', g, 'state') ~= 'running' then return end
  local chord = redis.call('HGET', g, 'chord_id')
  if redis.call('HSETNX', g, 'r' .. index, chord and result or '') == 0 then return end
  if redis.call('HINCRBY', g, 'pending', -1) > 0 then return end
  if chord then fire_chord(g, chord, tonumber(redis.call('HGET', g, 'total')) or 0) end
  end_group(g, 'done')
end

-- A member ended without finishing (failed for good, poison pill, canceled): the group
-- failed and its chord callback is canceled; returns the callback's id if it was.
--#cold
local function group_member_failed(id)
  local group_id = redis.call('HGET', job_key(id), 'group_id')
  if not group_id then return nil end
  local g = group_key(group_id)
  if redis.call('HGET', g, 'state') ~= 'running' then return nil end
  end_group(g, 'failed')
  local chord = redis.call('HGET', g, 'chord_id')
  if chord and redis.call('HGET', job_key(chord), 'status') == 'deferred' then
    mark_canceled(chord, job_key(chord), 'job ' .. id .. ' of its group did not finish')
    return chord
  end
  return nil
end

-- The parent ended: on success (or for dependents that allow failure) one parent less to
-- wait for; on a final failure the dependents are canceled, and theirs in turn.
--#cold
local function settle_found_dependents(parent_id, parent_ok)
  local work = {{parent_id, parent_ok}}
  while #work > 0 do
    local item = table.remove(work)
    if not item[2] then  -- every final failure passes here: its group's chord is canceled
      local chord = group_member_failed(item[1])
      if chord then table.insert(work, {chord, false}) end
    end
    local set = dependents_key(item[1])
    local children = redis.call('ZRANGE', set, 0, -1)  -- in the order they were enqueued
    if #children > 0 then redis.call('DEL', set) end  -- most jobs have none: one call
    for _, child in ipairs(children) do
      local key = job_key(child)
      if redis.call('HGET', key, 'status') == 'deferred' then
        if item[2] or redis.call('HGET', key, 'allow_failure') == '1' then
          local left = (tonumber(redis.call('HGET', key, 'pending_deps')) or 1) - 1
          redis.call('HSET', key, 'pending_deps', left)
          if left <= 0 then release(child, key) end
        else
          mark_canceled(child, key, 'job ' .. item[1] .. ', which it depends on, did not finish')
          table.insert(work, {child, false})
        end
      end
    end
  end
end

-- Every job that ends passes here, and most have no dependents and end well: one EXISTS,
-- and the cold functions are not made (build/cold.py).
local function settle_dependents(parent_id, parent_ok)
  if parent_ok and redis.call('EXISTS', dependents_key(parent_id)) == 0 then return end
  settle_found_dependents(parent_id, parent_ok)
end

-- Follow-up jobs (on_success/on_failure callbacks, webhooks), prepared at enqueue time as
-- JSON in the field on_<kind>_jobs. Their ids derive from the parent's and its attempt, so
-- a step that runs twice cannot create one twice.
-- `specs`: the field's value when the caller read it already (false: absent).
--#cold
local function spawn_followups(parent_id, parent_key, kind, outcome_field, outcome, specs)
  if specs == nil then specs = redis.call('HGET', parent_key, 'on_' .. kind .. '_jobs') end
  if not specs then return end
  -- Only a corrupt write makes the specs unreadable. Raising here would abort the step
  -- half-applied (Redis keeps a script's earlier writes), so the job's own outcome stands
  -- and the hash says why its follow-ups were not created.
  local ok, decoded = pcall(cjson.decode, specs)
  if not ok or type(decoded) ~= 'table' then
    redis.call('HSET', parent_key, 'followup_error', 'on_' .. kind .. '_jobs is not valid JSON')
    return
  end
  local attempts = redis.call('HGET', parent_key, 'attempts') or '0'
  for _, spec in ipairs(decoded) do
    if type(spec) ~= 'table' or type(spec.name) ~= 'string' or type(spec.fields) ~= 'table' then
      redis.call('HSET', parent_key, 'followup_error', 'on_' .. kind .. '_jobs holds a bad entry')
      return
    end
    local id = parent_id .. '.' .. spec.name .. '.' .. attempts
    local key = job_key(id)
    if redis.call('EXISTS', key) == 0 then
      local fields = {}
      for name, value in pairs(spec.fields) do
        fields[#fields + 1] = name
        fields[#fields + 1] = tostring(value)
      end
      redis.call('HSET', key, 'id', id, 'callback_of', parent_id, 'callback_kind', kind,
        outcome_field, outcome, 'created_at', NOW, 'attempts', 0, 'lost', 0, unpack(fields))
      push_queued(id, key, false)
      metric_count('enqueued', redis.call('HGET', key, 'queue'))
    end
  end
end
