--[[ complete: complete_job, a job's return value recorded (complete and complete_many).

complete_job(claim, id, result, serializer, key, started, finished, chained, stage): record
one job's return value, fenced by the claim of its run.

Context: NS, SEQ, EVENTS, WORKER, NOW (as the includes below need them), ACTIVE (leased
jobs), CLAIMS (claim -> job id). `key`, `started`, `finished`: job:<id>, started:<queue>,
finished:<queue>. done:<id> and canceling are built from NS (keys.lua) on the rare paths
that use them (a waiter, a cancel request, a result kept forever). `chained`: a
take follows for the same slot, so the `finished` event may share its entry with that
take's `started` (hold_events). `stage`: nil, or the next stage of a flow
(rqconc.Next) as {id, queue, fields (a list of field/value pairs), queues key, job key,
done key}.

A worker whose lease was lost (the job was recovered and may run elsewhere) presents a
stale claim and gets -1: it must drop its result, so a job is never completed twice. In the
same step: waiters of job.get() are woken (done:<id>, only if one marked the job),
dependents waiting on this job are released, follow-up jobs (on_success, success_url) are
created, the flow's next stage is enqueued, and when it is the last member of a group to
finish, the group's chord callback is enqueued (group_member_finished), so a crash can
neither drop nor duplicate them.

Returns 1 when recorded, -1 when the claim is stale, -2 when a job with the next stage's id
exists (in both refusals nothing is written).

Every job pays for this, so it reads the job once (one HMGET) and skips what a plain job
does not have: no dependents, callbacks, flow stage, group, waiter or kept result.
]]
--#needs NS ACTIVE CLAIMS
--#include state
--#include keys
--#include metrics
--#include gather
--#include events
--#include jobs
--#include limits
--#include dependents
--#include followups
--#include groups

-- NO_DEPENDENTS: true when the including step asked once, for all the jobs it
-- completes, and none has dependents waiting (complete and complete_many): each then skips
-- settle_dependents' own EXISTS. Only an enqueue registers dependents, never a step that
-- completes jobs.

-- How long done:<id> outlives a job kept for 0 s, so that waiters already blocked see it.
local DONE_GRACE_SECONDS = 10

local function complete_job(claim, id, result, serializer, key, started, finished, chained,
    stage)
  local now = now_ms()
  local job = redis.call('HMGET', key, 'token', 'queue', 'attempts', 'result_ttl',
    'cancel_requested', 'waiters', 'event_detail', 'started_at', 'func', 'flow_taken', 'lean')
  local token, queue, attempts, result_ttl, cancel_requested, waiters, event_detail,
    started_at, func, flow_taken, lean = unpack(job, 1, 11)
  -- The token is the fence: it is the claim of the run that holds the lease, or nothing.
  if token ~= claim then
    return -1
  end
  -- The fields of flows, callbacks, groups and unique jobs: only a job not stored `lean`
  -- can have them (scripts.LEAN_SPOILERS; each field asked for costs Redis ~2,000
  -- instructions, found or not).
  local flow_id, followups, group_id, group_index, unique_key, unique_for, chord_of
  if lean ~= '1' then
    flow_id, followups, group_id, group_index, unique_key, unique_for, chord_of = unpack(
      redis.call('HMGET', key, 'flow_id', 'on_success_jobs', 'group_id', 'group_index',
      'unique_key', 'unique_for', 'chord_of'), 1, 7)
  end
  local ttl = whole_number(result_ttl, -1, MAX_TTL, DEFAULT_RESULT_TTL)
  -- A next stage never overwrites a job (a caller's job_id, as enqueue refuses it). The
  -- worker checked when the stage returned (flows.Next.prepare); an id taken since then is
  -- refused here, before any write, so the run stays leased and, re-run after its lease,
  -- fails at that check.
  if stage and redis.call('EXISTS', stage[5]) == 1 then
    return -2
  end

  registry_write('HDEL', CLAIMS, claim)
  registry_write('ZREM', ACTIVE, id)
  registry_write('ZREM', started, id)
  if flow_taken then  -- taken under limits: a capped queue or group may start its next
    limits_released(id, queue)
  end
  if cancel_requested then
    redis.call('SREM', canceling_key(), id)  -- finishing first wins over a cancel request
  end
  local run_ms = metric_elapsed(started_at)
  if chained then hold_events() end  -- its `finished` may share an entry with `started`
  emit_detailed('finished', id, queue, event_detail or false, func or '', attempts, result,
    'run_time', string.format('%.3f', run_ms / 1000))
  metric_run_ended(queue, func, run_ms)
  if unique_key then  -- the key outlives its holder by unique_for (SPEC 11), then goes
    unique_ended(id, unique_key, unique_for)
  end

  -- A job kept for 0 s is deleted below: writing its end state first only matters when a
  -- follow-up or next stage reads it in this step.
  if ttl ~= 0 or followups or stage then
    redis.call('HDEL', key, 'token', 'cancel_requested')
    local count = (tonumber(attempts) or 0) + 1
    if ttl ~= 0 then
      redis.call('HSET', key, 'status', 'finished', 'ended_at', NOW, 'attempts', count,
        'result', result)
    else
      redis.call('HSET', key, 'status', 'finished', 'ended_at', NOW, 'attempts', count)
    end
  end

  if stage then  -- the next stage of a flow
    local next_id, next_queue, next_key = stage[1], stage[2], stage[5]
    local flow = flow_id or id
    redis.call('SADD', stage[4], next_queue)
    redis.call('DEL', stage[6])
    redis.call('HSET', next_key, unpack(stage[3]))
    redis.call('HSET', next_key, 'flow_id', flow, 'prev_id', id)
    redis.call('HSET', key, 'flow_id', flow, 'next_id', next_id)
    redis.call('HDEL', key, 'lean')  -- it has a flow's fields now (scripts.LEAN_SPOILERS)
    push_queued(next_id, next_key, false)
    metric_count('enqueued', next_queue)
  end

  if not NO_DEPENDENTS then settle_dependents(id, true) end
  if followups then
    spawn_followups(id, key, 'success', 'parent_result', result, followups)
  end
  if group_id then  -- a member of a group (the last one fires its chord, in this step)
    group_member_finished(group_id, group_index, result)
  end
  if chord_of then  -- a chord's callback: the group's results it read go
    chord_ended(chord_of, nil)
  end

  -- get() marks a job it waits for (await.lua), so nobody-waits costs nothing here; a later
  -- get() reads the result from the hash.
  local done = (waiters or ttl < 0) and done_key(id)
  if waiters then
    redis.call('DEL', done)
    redis.call('RPUSH', done, 'finished:' .. serializer .. ':' .. result)
    redis.call('EXPIRE', done, ttl > 0 and ttl or DONE_GRACE_SECONDS)
  end

  if ttl == 0 then
    job_deleted(key)
  else
    -- Entries are scored by expiry, so trimming the expired ones costs O(log n + trimmed).
    redis.call('ZREMRANGEBYSCORE', finished, '-inf', now)
    if ttl < 0 then
      redis.call('PERSIST', key)
      redis.call('PERSIST', done)
      redis.call('ZADD', finished, '+inf', id)
    else
      redis.call('EXPIRE', key, ttl)
      redis.call('ZADD', finished, now + ttl * 1000, id)
    end
  end
  return 1
end
