--[[ recover: bring back jobs whose lease expired (their worker vanished).

Maintenance, run by one supervisor per interval. The caller read the expired entries of
active and each job's queue and token beforehand; this step re-checks both, so a job
renewed or re-taken in between is left alone. The vanished run counts as an attempt.
A job whose lease was lost max_lost times is a poison pill: it goes to the dead letters
instead of crashing worker after worker. A job asked to stop is canceled instead.

KEYS[1]          seq                 INCR counter
KEYS[2]          active              leased jobs, score = lease deadline (ms)
KEYS[3]          claims              claim -> job id
KEYS[4]          events              the event stream
KEYS[5]          canceling           jobs asked to stop while running
KEYS[5i+1]       job:<id>            for the i-th job (i = 1..n):
KEYS[5i+2]       started:<queue>       its queue's running jobs,
KEYS[5i+3]       failed:<queue>        its queue's dead letters,
KEYS[5i+4]       failed_expiry:<queue> their expiry times,
KEYS[5i+5]       done:<id>             its completion list

ARGV[1]          max_lost: the number of lost leases that makes a poison pill
ARGV[2]          namespace prefix "{ns}:"
ARGV[2i+1]       the i-th job's id
ARGV[2i+2]       the token it had when read ("" if none)

Returns {requeued, dead}: how many went back to the front of their queue, how many to the
dead letters (or were canceled).
]]
--#context NS=ARGV[2] SEQ=KEYS[1] EVENTS=KEYS[4] WORKER=''
--#include clock
--#include metrics
--#include events
--#include jobs
--#include limits
--#include dependents
--#include followups

local now, max_lost = tonumber(NOW), tonumber(ARGV[1])
local requeued, dead = 0, 0

local function poison(id, key, failed, expiries, done, lost)
  local message = 'the lease of this job expired ' .. lost .. ' times (its worker vanished '
    .. 'each time); treated as a poison pill and moved to the dead letters'
  redis.call('HSET', key, 'status', 'failed', 'ended_at', NOW,
    'exc_type', 'rqconc.errors.WorkerLost', 'exc_message', message, 'traceback', '')
  add_dead_letter(failed, expiries, now, id, key)
  local outcome = cjson.encode({'rqconc.errors.WorkerLost', message, ''})
  redis.call('DEL', done)
  redis.call('RPUSH', done, 'failed:' .. outcome)
  keep_for_failure_ttl(key, done, id)
  local queue, func = unpack(redis.call('HMGET', key, 'queue', 'func'))
  emit('failed', id, queue, exception_fields('rqconc.errors.WorkerLost', message))
  metric_failed(queue, func)
  settle_dependents(id, false)
  spawn_followups(id, key, 'failure', 'parent_exc', outcome)
end

for i = 1, (#ARGV - 2) / 2 do
  local id, token = ARGV[2 * i + 1], ARGV[2 * i + 2]
  local key = KEYS[5 * i + 1]
  local deadline = redis.call('ZSCORE', KEYS[2], id)
  local exists = redis.call('EXISTS', key) == 1
  local current = exists and (redis.call('HGET', key, 'token') or '') or token
  if deadline and tonumber(deadline) <= now and current == token then
    redis.call('ZREM', KEYS[2], id)
    if token ~= '' then redis.call('HDEL', KEYS[3], token) end
    if exists then
      redis.call('HDEL', key, 'token')
      redis.call('ZREM', KEYS[5 * i + 2], id)
      limits_released(id, redis.call('HGET', key, 'queue'))  -- its slot comes back
      bump(key, 'attempts')
      local lost = bump(key, 'lost')
      if redis.call('HGET', key, 'cancel_requested') then
        redis.call('SREM', KEYS[5], id)
        mark_canceled(id, key, 'canceled while running')
        settle_dependents(id, false)
        dead = dead + 1
      elseif lost >= max_lost then
        poison(id, key, KEYS[5 * i + 3], KEYS[5 * i + 4], KEYS[5 * i + 5], lost)
        dead = dead + 1
      else
        local queue = redis.call('HGET', key, 'queue')
        emit('requeued', id, queue, 'reason', 'lease expired')
        metric_count('retried', queue)
        push_queued(id, key, true)
        requeued = requeued + 1
      end
    end
  end
end
return {requeued, dead}
