--[[ events: one entry of the event stream per transition, in the step that makes it
(SPEC 10, 14): emit, emit_with and the held `finished` + `started` entry of a fused step.
Context: NS, EVENTS (the stream's key), WORKER (the acting worker's name, or ""), NOW.
]]
--#needs NS EVENTS WORKER NOW
--#include state
--#include keys

-- No step trims the stream: its XADD has no MAXLEN. Retention by age and a cap, and the
-- count of entries dropped before a consumer group acknowledged them, are the maintenance
-- pass's (lua/trim_events.lua), so a job's steps pay nothing for them (issue 36).
-- Numbers that Redis receives as arguments are sent as text: a Lua number given to
-- redis.call is formatted with snprintf on each call (Redis 6.2 and 7.0; ~2,500 instructions,
-- bench/step_cost.py), a string is passed as it is.

-- Every event carries the job's `func` and `attempt` (SPEC 10): the 1-based number of the
-- execution it is about: for failed and retry the run that just ended (their steps count it
-- before they emit), for the others the current or next one (stored count + 1).
-- The fields a job of a queue with event_detail="full" adds to its events (SPEC 14): its
-- call, its result (`result`, given by complete), the host (the acting worker's, from its
-- registry entry; the producer's for client-side steps) and meta.log_tag.
-- A step that has read a job's event_detail, func and attempts already (take, complete,
-- enqueue: every job pays for those) gives them with its event (emit_detailed) or says so
-- with know_detail, so that a plain job's events cost no extra command there; elsewhere a
-- job pays one HMGET per event.
local EXC_MESSAGE_MAX = 1000  -- bytes of an exception message an event keeps

-- func and attempts may be omitted (nil): the events then read them.
local function know_detail(id, detail, func, attempts)
  KNOWN_DETAIL[id] = {detail or false, func, attempts}
end

-- know_detail with the caller's own {detail or false, func, attempts}, which it may give
-- many jobs (an enqueue of a batch of one function: one table, not one a job). Never
-- changed once given.
local function know_detail_as(id, known)
  KNOWN_DETAIL[id] = known
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

-- One entry of the event stream per transition, in the step that makes it; except
-- that the step completing a job and taking the next (complete with a next claim) writes its
-- `finished` and `started` as one entry: the second event's fields follow the first's, each
-- name prefixed with '+', and share its ts and worker (rqconc/queue/events.py splits them).
-- One XADD less per job (issue 21). hold_events makes the next event wait for the one
-- after it: a `started` joins it, any other event writes it first (order is kept), and
-- flush_events writes what is still held.
local function hold_events() HELD = false end

local function xadd(fields)
  redis.call('XADD', EVENTS, '*', unpack(fields))
end

local function flush_events()
  local held = HELD
  if held then xadd(held) end
  HELD = nil
end

-- The event of a job whose event_detail, func and attempts the caller read (take and
-- complete, every job's steps): no table to hold them, none to look them up in (about
-- 5,000 Redis instructions a fused step, bench/PROFILE.md section 15). `detail` false for
-- a queue without full detail, `func` '' when the job names none.
local function emit_detailed(event, id, queue, detail, func, attempts, result, ...)
  local attempt = tonumber(attempts) or 0
  -- failed and retry: the run that just ended (compared, not looked up in a table: a
  -- table would be built on every call of the step)
  if event ~= 'failed' and event ~= 'retry' then attempt = attempt + 1 end
  if attempt == 1 then attempt = '1' end  -- most events: as text (see above)
  local held = HELD
  if held and event == 'started' and detail ~= 'full' then
    local fields, n = held, #held
    HELD = nil
    fields[n + 1], fields[n + 2], fields[n + 3], fields[n + 4] = '+event', event, '+job_id', id
    fields[n + 5], fields[n + 6], fields[n + 7], fields[n + 8] = '+queue', queue or '',
      '+attempt', attempt
    fields[n + 9], fields[n + 10] = '+func', func
    xadd(fields)
    return
  end
  local fields = {'event', event, 'job_id', id, 'queue', queue or '', 'ts', NOW,
    'worker', WORKER, 'attempt', attempt, 'func', func, ...}
  if detail == 'full' then  -- most queues: no detail, and no table made for none
    for _, value in ipairs(detail_of(event, id, result, detail)) do
      fields[#fields + 1] = value
    end
  end
  if held == false then
    HELD = fields
    return
  end
  flush_events()
  xadd(fields)
end

local function emit_with(event, id, queue, result, ...)
  local known = known_of(id)
  emit_detailed(event, id, queue, known[1], known[2], known[3], result, ...)
end

-- The fields failed and retry events add: the exception's type and (the start of) its message.
--#cold
local function exception_fields(exc_type, message)
  return 'exc_type', exc_type, 'exc_message', string.sub(message or '', 1, EXC_MESSAGE_MAX)
end

local function emit(event, id, queue, ...)
  emit_with(event, id, queue, nil, ...)
end

-- emit for an event about a job's next execution (not failed or retry) whose {detail, func,
-- attempts} the step holds (`known`, as know_detail_as takes it): the same entry, written
-- straight from its values while the job's queue keeps no detail and no entry is held (an
-- enqueue's events: a table and an unpack less a job, ~6,000 Redis instructions).
local function emit_next(event, id, queue, known)
  if known[1] == 'full' or HELD ~= nil then
    know_detail_as(id, known)
    return emit(event, id, queue)
  end
  local attempt = (tonumber(known[3]) or 0) + 1
  if attempt == 1 then attempt = '1' end  -- as text (see above)
  redis.call('XADD', EVENTS, '*', 'event', event, 'job_id', id, 'queue', queue or '',
    'ts', NOW, 'worker', WORKER, 'attempt', attempt, 'func', known[2])
end
