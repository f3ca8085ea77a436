--[[ complete: record a job's return value, fenced by the claim of its run.

A worker whose lease was lost (the job was recovered and may run elsewhere) presents a
stale claim and gets -1: it must drop its result, so a job is never completed twice.
In the same step: waiters of job.get() are woken (done:<id>, only if one marked the job), dependents waiting on this
job are released, follow-up jobs (on_success, success_url) are created, when the job
returned rqconc.Next, the next stage of its flow is enqueued, and when it is the last
member of a group to finish, the group's chord callback is enqueued (include/lifecycle's
group_member_finished), so a crash can neither drop nor duplicate them.

KEYS[1]          active              leased jobs
KEYS[2]          claims              claim -> job id
KEYS[3]          job:<id>            the job's hash
KEYS[4]          started:<queue>     running jobs of its queue
KEYS[5]          finished:<queue>    finished jobs, score = expiry time (ms; +inf: kept forever)
KEYS[6]          done:<id>           completion list (pushed only when job.get() waits)
KEYS[7]          seq                 INCR counter
KEYS[8]          events              the event stream
KEYS[9]          canceling           jobs asked to stop while running
KEYS[10..]       with a next claim: 4 keys per listened queue, as in take
                 (q, marker, scheduled, started), nq queues
KEYS[10+4nq..]   with a next stage: queues, job:<next id>, done:<next id>

ARGV[1]          claim
ARGV[2]          job id
ARGV[3]          the serialized return value
ARGV[4]          the serializer's name ("json" or "pickle")
ARGV[5]          seconds done:<id> lives when result_ttl is 0 (so current waiters see it)
ARGV[6]          namespace prefix "{ns}:"
ARGV[7]          worker name
ARGV[8]          the next claim, or "" to take nothing
ARGV[9]          lease length (ms) of the next take
ARGV[10]         how many due scheduled jobs to promote per queue at most
ARGV[11]         nq, the number of listened queues (0 without a next claim)
ARGV[12...]      with a next stage: its id, queue name, k, then k field/value pairs

Returns {1} when recorded, {1, next} when recorded and a next claim was given (next as the
take step returns it: the job's fields, or the delay until the earliest due time / -1), {-1} when the claim
is stale, {-2, next id} when a job with the next stage's id exists (in both refusals
nothing is written, nothing taken).

Every job pays for this step, so it reads the job once (one HMGET) and skips what a plain
job does not have: no dependents, callbacks, flow stage, group, waiter or kept result.
]]
local NS, SEQ, EVENTS, WORKER = ARGV[6], KEYS[7], KEYS[8], ARGV[7]
--#include clock
--#include lifecycle
--#include flow
--#include take

local claim, id, now = ARGV[1], ARGV[2], tonumber(NOW)
local key, done = KEYS[3], KEYS[6]
local job = redis.call('HMGET', key, 'token', 'queue', 'attempts', 'result_ttl', 'flow_id',
  'on_success_jobs', 'cancel_requested', 'waiters', 'group_id', 'group_index', 'event_detail',
  'started_at', 'func', 'flow_taken', 'unique_key', 'unique_for')
local token, queue, attempts, result_ttl, flow_id, followups, cancel_requested, waiters,
  group_id, group_index, event_detail, started_at, func, flow_taken, unique_key,
  unique_for = unpack(job, 1, 16)
-- The token is the fence: it is the claim of the run that holds the lease, or nothing.
if token ~= claim then
  return {-1}
end
know_detail(id, event_detail, func or '', attempts)
local nq = tonumber(ARGV[11])
local ttl = whole_number(result_ttl, -1, MAX_TTL, DEFAULT_RESULT_TTL)
local next_stage = ARGV[12]
-- A next stage never overwrites a job (a caller's job_id, as enqueue refuses it). The
-- worker checked when the stage returned (flows.Next.prepare); an id taken since then is
-- refused here, before any write, so the run stays leased and, re-run after its lease,
-- fails at that check.
if next_stage and redis.call('EXISTS', KEYS[10 + 4 * nq + 1]) == 1 then
  return {-2, next_stage}
end

redis.call('HDEL', KEYS[2], claim)
redis.call('ZREM', KEYS[1], id)
redis.call('ZREM', KEYS[4], id)
if flow_taken then  -- taken under flow control: a capped queue or group may start its next
  flow_released(id, queue)
end
if cancel_requested then
  redis.call('SREM', KEYS[9], id)  -- finishing first wins over a cancel request
end
local run_ms = metric_elapsed(started_at)
if ARGV[8] ~= '' then hold_events() end  -- its `finished` may share an entry with `started`
emit_with('finished', id, queue, ARGV[3], 'run_time', string.format('%.3f', run_ms / 1000))
metric_finished(queue, run_ms)
if unique_key then  -- the key outlives its holder by unique_for (SPEC 11), then goes
  unique_ended(id, unique_key, unique_for)
end

-- A job kept for 0 s is deleted below: writing its end state first only matters when a
-- follow-up or next stage reads it in this step.
if ttl ~= 0 or followups or next_stage then
  redis.call('HDEL', key, 'token', 'cancel_requested')
  local count = (tonumber(attempts) or 0) + 1
  if ttl ~= 0 then
    redis.call('HSET', key, 'status', 'finished', 'ended_at', NOW, 'attempts', count,
      'result', ARGV[3])
  else
    redis.call('HSET', key, 'status', 'finished', 'ended_at', NOW, 'attempts', count)
  end
end

if next_stage then  -- the next stage of a flow
  local next_queue, k = ARGV[13], tonumber(ARGV[14])
  local stage_keys = 10 + 4 * nq
  local next_key = KEYS[stage_keys + 1]
  local flow = flow_id or id
  redis.call('SADD', KEYS[stage_keys], next_queue)
  redis.call('DEL', KEYS[stage_keys + 2])
  redis.call('HSET', next_key, unpack(ARGV, 15, 14 + 2 * k))
  redis.call('HSET', next_key, 'flow_id', flow, 'prev_id', id)
  redis.call('HSET', key, 'flow_id', flow, 'next_id', next_stage)
  push_queued(next_stage, next_key, false)
  metric_count('enqueued', next_queue)
end

settle_dependents(id, true)
if followups then
  spawn_followups(id, key, 'success', 'parent_result', ARGV[3], followups)
end
if group_id then  -- a member of a group (the last one fires its chord, in this step)
  group_member_finished(group_id, group_index, ARGV[3])
end

-- get() marks a job it waits for (await.lua), so nobody-waits costs nothing here; a later
-- get() reads the result from the hash.
if waiters then
  redis.call('DEL', done)
  redis.call('RPUSH', done, 'finished:' .. ARGV[4] .. ':' .. ARGV[3])
  redis.call('EXPIRE', done, ttl > 0 and ttl or ARGV[5])
end

if ttl == 0 then
  redis.call('DEL', key)
else
  -- Entries are scored by expiry, so trimming the expired ones costs O(log n + trimmed).
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
  if ttl < 0 then
    redis.call('PERSIST', key)
    redis.call('PERSIST', done)
    redis.call('ZADD', KEYS[5], '+inf', id)
  else
    redis.call('EXPIRE', key, ttl)
    redis.call('ZADD', KEYS[5], now + ttl * 1000, id)
  end
end
if ARGV[8] == '' then
  return {1}
end
local taken = take_next(ARGV[8], tonumber(ARGV[9]), ARGV[10], KEYS[1], KEYS[2], 10, nq, false)
flush_events()  -- `finished` alone when nothing was taken
return {1, taken}
