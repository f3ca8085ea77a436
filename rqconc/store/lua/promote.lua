--[[ promote: a scheduled or deferred job of a queue runs now (q.promote(job_id)).

It leaves the scheduled or deferred set and joins the back of its queue in the same step,
so no take can see it in both or in neither. A deferred job stops waiting for its parents:
when they end, settle_dependents skips it (it is no longer deferred).

KEYS[1]          job:<id>            the job's hash
KEYS[2]          scheduled:<queue>   delayed and retrying jobs
KEYS[3]          deferred:<queue>    jobs waiting for their parents
KEYS[4]          seq                 INCR counter
KEYS[5]          events              the event stream

ARGV[1]          job id
ARGV[2]          namespace prefix "{ns}:"
ARGV[3]          queue name

Returns 1 when promoted, 0 when the job is neither scheduled nor deferred (nothing
written), -1 when there is no such job, -2 when it belongs to another queue.
]]
--#context NS=ARGV[2] SEQ=KEYS[4] EVENTS=KEYS[5] WORKER=''
--#include clock
--#include jobs

local id, key = ARGV[1], KEYS[1]
local status = redis.call('HGET', key, 'status')
if not status then
  return -1
end
if (redis.call('HGET', key, 'queue') or 'default') ~= ARGV[3] then
  return -2
end
if status == 'scheduled' then
  redis.call('ZREM', KEYS[2], id)
elseif status == 'deferred' then
  redis.call('ZREM', KEYS[3], id)
  redis.call('HSET', key, 'pending_deps', 0)
else
  return 0
end
push_queued(id, key, false)
return 1
