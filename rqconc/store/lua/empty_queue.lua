--[[ empty_queue: delete up to a batch of a queue's waiting jobs (q.empty()), popped and
ended in this one step, so that no take sees a job half-deleted.

Each job popped ends as a deleted one does (include/removal.lua): a waiting job did not
finish, so its dependents are canceled (or released if they allow failure), its group fails
and its chord callback is canceled, its unique key ends (kept `unique_for` more, else gone),
and a caller blocked in job.get() wakes with JobCanceled. An entry whose job is gone, or no
longer waiting (a stale entry), only leaves the queue. The jobs parked behind their groups'
caps go with drop_parked.

KEYS[1]          q:<queue>           waiting jobs
KEYS[2]          seq                 INCR counter (settle_dependents may enqueue)
KEYS[3]          events              the event stream

ARGV[1]          namespace prefix "{ns}:" (job:<id>, done:<id> are built from it)
ARGV[2]          most jobs popped by this call
ARGV[3]          seconds the outcome list `canceled:` lasts for waiters

Returns {deleted, popped}: jobs deleted, entries popped (0: the queue is empty).
]]
--#context NS=ARGV[1] SEQ=KEYS[2] EVENTS=KEYS[3] WORKER=''
--#include clock
--#include keys
--#include removal

local grace = tonumber(ARGV[3])
local entries = redis.call('ZPOPMIN', KEYS[1], tonumber(ARGV[2]))
local deleted = 0
for i = 1, #entries, 2 do
  local id = entries[i]
  local key = job_key(id)
  local status = redis.call('HGET', key, 'status')
  if status == 'queued' then
    remove_job(id, key, status, grace)
    deleted = deleted + 1
  end
end
return {deleted, #entries / 2}
