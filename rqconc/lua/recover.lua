--[[ recover: bring back jobs whose lease expired (their worker vanished).

Maintenance, run by one supervisor per interval. The caller read the expired entries of
active and each job's queue and token beforehand (so that no key name is built here); this
step re-checks both, so a job renewed or re-taken in between is left alone.
A job whose lease was lost max_lost times is a poison pill: it goes to the dead letters
instead of crashing worker after worker.

KEYS[1]          seq                 INCR counter
KEYS[2]          active              leased jobs, score = lease deadline (ms)
KEYS[3]          claims              claim -> job id
KEYS[6i-2]       job:<id>            for the i-th job (i = 1..n):
KEYS[6i-1]       q:<queue>             its queue,
KEYS[6i]         marker:<queue>        its queue's marker,
KEYS[6i+1]       started:<queue>       its queue's running jobs,
KEYS[6i+2]       failed:<queue>        its queue's dead letters,
KEYS[6i+3]       done:<id>             its completion list

ARGV[1]          now (ms)
ARGV[2]          max_lost: the number of lost leases that makes a poison pill
ARGV[2i+1]       the i-th job's id
ARGV[2i+2]       the token it had when read ("" if none)

Returns {requeued, dead}: how many went back to the front of their queue, how many to the
dead letters.
]]
-- Counters are read with tonumber, not HINCRBY: a corrupt field must not break this step.
local function bump(key, field)
  local value = (tonumber(redis.call('HGET', key, field)) or 0) + 1
  redis.call('HSET', key, field, value)
  return value
end

local now, max_lost = tonumber(ARGV[1]), tonumber(ARGV[2])
local requeued, dead = 0, 0

local function poison(key, failed, done, id, lost)
  local message = 'the lease of this job expired ' .. lost .. ' times (its worker vanished '
    .. 'each time); treated as a poison pill and moved to the dead letters'
  redis.call('HSET', key, 'status', 'failed', 'ended_at', ARGV[1],
    'exc_type', 'rqconc.errors.WorkerLost', 'exc_message', message, 'traceback', '')
  redis.call('ZADD', failed, now, id)
  redis.call('DEL', done)
  redis.call('RPUSH', done, 'failed:' .. cjson.encode({'rqconc.errors.WorkerLost', message, ''}))
  local ttl = tonumber(redis.call('HGET', key, 'failure_ttl')) or -1
  if ttl > 0 then
    redis.call('EXPIRE', key, ttl)
    redis.call('EXPIRE', done, ttl)
  end
end

local function to_front(key, queue, marker, id)
  redis.call('HSET', key, 'status', 'queued')
  local priority = tonumber(redis.call('HGET', key, 'priority')) or 1
  local score = (100 - priority) * 4294967296 + 2147483648 - redis.call('INCR', KEYS[1])
  redis.call('ZADD', queue, score, id)
  redis.call('ZADD', marker, 0, '0')
end

for i = 1, (#ARGV - 2) / 2 do
  local id, token = ARGV[2 * i + 1], ARGV[2 * i + 2]
  local key = KEYS[6 * i - 2]
  local deadline = redis.call('ZSCORE', KEYS[2], id)
  local exists = redis.call('EXISTS', key) == 1
  local current = exists and (redis.call('HGET', key, 'token') or '') or token
  if deadline and tonumber(deadline) <= now and current == token then
    redis.call('ZREM', KEYS[2], id)
    if token ~= '' then redis.call('HDEL', KEYS[3], token) end
    if exists then
      redis.call('HDEL', key, 'token')
      redis.call('ZREM', KEYS[6 * i + 1], id)
      bump(key, 'attempts')
      local lost = bump(key, 'lost')
      if lost >= max_lost then
        poison(key, KEYS[6 * i + 2], KEYS[6 * i + 3], id, lost)
        dead = dead + 1
      else
        to_front(key, KEYS[6 * i - 1], KEYS[6 * i], id)
        requeued = requeued + 1
      end
    end
  end
end
return {requeued, dead}
