--[[ requeue: requeue_held, a leased job put back in its queue untouched (requeue_front for
one claim, requeue_claims for all the claims of a cold shutdown's children).

requeue_held(claim, id, key, started, event, front, active, claims, canceling): job `id`
(hash `key`, of the queue whose running jobs are `started`) leaves its lease under `claim`
and goes back to the front of its queue (the back when `front` is false), with event
`event` and no attempt counted; a job asked to stop meanwhile is canceled instead. The
caller checked that `claims` maps `claim` to `id`; the job's token is checked here.
Returns 1 when requeued (or canceled), 0 when the claim no longer holds the job.
Context: NS, SEQ, EVENTS, WORKER, NOW (as the includes below need them).
]]
--#needs NS SEQ EVENTS WORKER NOW
--#include events
--#include jobs
--#include limits
--#include dependents

local function requeue_held(claim, id, key, started, event, front, active, claims, canceling)
  if redis.call('HGET', key, 'token') ~= claim then
    return 0
  end
  redis.call('HDEL', claims, claim)
  redis.call('ZREM', active, id)
  redis.call('ZREM', started, id)
  limits_released(id, redis.call('HGET', key, 'queue'))  -- a capped queue may start its next
  redis.call('HDEL', key, 'token')
  if redis.call('HGET', key, 'cancel_requested') then
    redis.call('SREM', canceling, id)
    mark_canceled(id, key, 'canceled while running')
    settle_dependents(id, false)
    return 1
  end
  emit(event, id, redis.call('HGET', key, 'queue'))
  push_queued(id, key, front)
  return 1
end
