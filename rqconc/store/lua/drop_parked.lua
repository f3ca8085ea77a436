--[[ drop_parked: delete the jobs of a queue's groups parked at their caps (q.empty(),
q.delete()), a batch at a time.

A grouped job popped while its group is at a cap waits in parked:<queue>:<group> instead of
the queue (lua/include/limits.lua); those jobs are waiting ones, so emptying or deleting the
queue removes them too. Each is popped and ends as a deleted job does (include/removal.lua:
its dependents canceled, its group's chord canceled, its unique key ended, waiters woken
with JobCanceled) in this one step, so no take can unpark a job half-deleted, and a group
leaves parkedgroups with its last parked job. Entries whose job is no longer waiting
(canceled before this version removed them, or gone) are dropped without touching the job.

KEYS[1]          parkedgroups:<queue>  the queue's groups with parked jobs
KEYS[2]          seq                   INCR counter (settle_dependents may enqueue)
KEYS[3]          events                the event stream

ARGV[1]          namespace prefix "{ns}:" (parked:<queue>:<group>, job:<id> are built from it)
ARGV[2]          queue name
ARGV[3]          most entries popped by this call
ARGV[4]          seconds the outcome list `canceled:` lasts for waiters

Returns {deleted, popped}: jobs deleted, entries popped (0: no parked job is left).
]]
--#context NS=ARGV[1] SEQ=KEYS[2] EVENTS=KEYS[3] WORKER=''
--#include clock
--#include keys
--#include removal

local queue, left, grace = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local deleted, popped = 0, 0
for _, group in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if left <= 0 then break end
  local parked = NS .. 'parked:' .. queue .. ':' .. group
  local entries = redis.call('ZPOPMIN', parked, left)
  for i = 1, #entries, 2 do
    local id = entries[i]
    local key = job_key(id)
    popped, left = popped + 1, left - 1
    if redis.call('HGET', key, 'status') == 'queued' then
      remove_job(id, key, 'queued', grace)
      deleted = deleted + 1
    end
  end
  if redis.call('EXISTS', parked) == 0 then
    redis.call('SREM', KEYS[1], group)
  end
end
return {deleted, popped}
