--[[ enqueue_unique: store one job that holds a unique key (SPEC 11 `unique_key`), or
return the job that holds it already; with `debounce`, move that job instead.

unique:<key> names the job holding the key. It holds it while its status is queued,
scheduled, deferred or started, and for its `unique_for` (ms) after it ended (`ended_at`);
afterwards (or once its hash expired) a new job takes the key over. The steps that end a
job give the key that same lifetime (include/jobs.lua unique_ended): it expires `unique_for`
after the end, or goes at once without one, so unused keys do not pile up. With `debounce` (ms):
a holder still waiting (queued or scheduled) takes the new job's arguments and is
scheduled `debounce` ms from now, so it runs once with the latest ones; a deferred holder
takes them too and is due `debounce` ms from now once released. A holder already running
does not see them: a new job takes the key, deferred behind the holder as a dependent that
allows failure (released when the holder ended, however it ended) and due `debounce` ms
from now; later debounces replace its arguments. So at most one job of a key runs at a
time, and the latest arguments run once.

KEYS[1]          seq                 INCR counter (queue order)
KEYS[2]          queues              set of known queue names
KEYS[3]          q:<queue>           waiting jobs
KEYS[4]          marker:<queue>      wake-up marker
KEYS[5]          scheduled:<queue>   delayed jobs, score = due time (ms)
KEYS[6]          events              the event stream
KEYS[7]          job:<id>            the new job's hash
KEYS[8]          unique:<key>        the id of the job holding the key

ARGV[1]          queue name
ARGV[2]          due time (ms), or "" to wait in the queue at once
ARGV[3]          namespace prefix "{ns}:"
ARGV[4]          priority (0..100)
ARGV[5]          the new job's id
ARGV[6...]       the new job's field/value pairs (with unique_key, and unique_for and
                 debounce in ms when given)

Returns {1, id} stored as a new job (deferred behind a running holder with debounce),
        {0, holder} the holder stays as it is,
        {2, holder} the holder was debounced (new arguments, later start).

Only a new job counts in rqconc_jobs_enqueued_total (every job stored counts once, as in
enqueue.lua): a holder returned or debounced was counted when it was stored.
]]
--#context NS=ARGV[3] SEQ=KEYS[1] EVENTS=KEYS[6] WORKER=''
--#include clock
--#include keys
--#include events
--#include jobs
--#include metrics

local queue, due, id, now = ARGV[1], ARGV[2], ARGV[5], tonumber(NOW)
local fields = {unpack(ARGV, 6)}
local function field(name)
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return nil
end
local debounce = tonumber(field('debounce'))
local WAITING = {queued = true, scheduled = true}
local HOLDING = {queued = true, scheduled = true, deferred = true, started = true}

local holder = redis.call('GET', KEYS[8])
if holder then
  local hkey = job_key(holder)
  local state = redis.call('HMGET', hkey, 'status', 'ended_at', 'unique_for')
  local status = state[1]
  if debounce and (WAITING[status] or status == 'deferred') then
    -- The waiting holder runs once, later, with the latest arguments.
    redis.call('HDEL', hkey, 'args', 'kwargs')
    local args, kwargs = field('args'), field('kwargs')
    if args then redis.call('HSET', hkey, 'args', args) end
    if kwargs then redis.call('HSET', hkey, 'kwargs', kwargs) end
    local hqueue = redis.call('HGET', hkey, 'queue') or queue
    if status == 'deferred' then  -- still behind its parents: due later once released
      redis.call('HSET', hkey, 'due_at', now + debounce)
    else
      redis.call('ZREM', queue_key(hqueue), holder)
      redis.call('ZADD', scheduled_key(hqueue), now + debounce, holder)
      redis.call('HSET', hkey, 'status', 'scheduled', 'due_at', now + debounce)
    end
    emit('debounced', holder, hqueue)
    return {2, holder}
  end
  if HOLDING[status] and not debounce then return {0, holder} end
  local ended, keep = tonumber(state[2]), tonumber(state[3])
  if status and not HOLDING[status] and ended and keep and ended + keep > now then
    return {0, holder}
  end
end

redis.call('SADD', KEYS[2], queue)
redis.call('HSET', KEYS[7], 'queue', queue, 'created_at', NOW, unpack(fields))
metric_count('enqueued', queue)
redis.call('SET', KEYS[8], id)
if debounce then due = tostring(now + debounce) end
if debounce and holder and redis.call('HGET', job_key(holder), 'status') == 'started' then
  -- Behind the running holder (include/dependents.lua releases it when the holder ended).
  redis.call('HSET', KEYS[7], 'status', 'deferred', 'due_at', due, 'pending_deps', 1,
    'allow_failure', '1', 'depends_on', cjson.encode({holder}))
  redis.call('ZADD', dependents_key(holder), redis.call('INCR', SEQ), id)
  redis.call('ZADD', deferred_key(queue), NOW, id)
  emit('deferred', id, queue)
elseif due ~= '' then
  redis.call('HSET', KEYS[7], 'status', 'scheduled', 'due_at', due)
  redis.call('ZADD', KEYS[5], due, id)
  emit('scheduled', id, queue)
else
  redis.call('HSET', KEYS[7], 'status', 'queued', 'enqueued_at', NOW)
  redis.call('ZADD', KEYS[3], score_of(ARGV[4], redis.call('INCR', SEQ), false), id)
  redis.call('ZADD', KEYS[4], 0, '0')
  emit('queued', id, queue)
end
return {1, id}
