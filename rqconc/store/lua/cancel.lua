--[[ cancel: cancel a job, or ask the worker running it to stop it.

Called by job.cancel() without a claim: a waiting job (queued, scheduled, deferred) is
removed and canceled at once; a running one is marked cancel_requested and put in
`canceling`, which supervisors read every tick to end the child running it. They then call
this step again WITH the claim of that run, which cancels it (fenced: a stale claim does
nothing). Canceling a job cancels its dependents (unless they allow failure).

KEYS[1]          job:<id>            the job's hash
KEYS[2]          canceling           jobs asked to stop while running
KEYS[3]          active              leased jobs
KEYS[4]          claims              claim -> job id
KEYS[5]          seq                 INCR counter
KEYS[6]          events              the event stream

ARGV[1]          job id
ARGV[2]          namespace prefix "{ns}:"
ARGV[3]          claim of the run being stopped, or "" (a user's request)
ARGV[4]          worker name, or ""

Returns 1 when canceled, 2 when the running job was asked to stop, 0 when it had already
ended (or the claim is stale), -1 when there is no such job.
]]
--#context NS=ARGV[2] SEQ=KEYS[5] EVENTS=KEYS[6] WORKER=ARGV[4]
--#include clock
--#include keys
--#include jobs
--#include limits
--#include dependents

local id, key, claim = ARGV[1], KEYS[1], ARGV[3]
local status = redis.call('HGET', key, 'status')
if not status then
  return -1
end
local queue = redis.call('HGET', key, 'queue') or 'default'

if claim ~= '' then
  if redis.call('HGET', KEYS[4], claim) ~= id or redis.call('HGET', key, 'token') ~= claim then
    return 0
  end
  redis.call('HDEL', KEYS[4], claim)
  redis.call('ZREM', KEYS[3], id)
  redis.call('ZREM', started_key(queue), id)
  limits_released(id, queue)  -- a capped queue may start its next job
  redis.call('SREM', KEYS[2], id)
  mark_canceled(id, key, 'canceled while running')
  settle_dependents(id, false)
  return 1
end

if status == 'finished' or status == 'failed' or status == 'canceled' then
  return 0
end
if status == 'started' then
  redis.call('HSET', key, 'cancel_requested', NOW)
  redis.call('SADD', KEYS[2], id)
  return 2
end
redis.call('ZREM', queue_key(queue), id)
redis.call('ZREM', scheduled_key(queue), id)
forget_parked(id, key, queue)  -- parked behind its group's cap
mark_canceled(id, key, 'canceled before it started')
settle_dependents(id, false)
return 1
