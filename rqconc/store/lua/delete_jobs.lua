--[[ delete_jobs: delete jobs that are not running (job.delete(), q.delete()).

Each job leaves every set of its queue (waiting, scheduled, deferred, finished, failed, and
its group's parked jobs) and its hash and outcome list go. A running job is left alone (its
worker records its outcome as usual). A job deleted before it finished ends as one that did
not finish (include/removal.lua): its dependents are canceled (or released if they allow
failure), its group fails and its chord callback is canceled, its unique key ends, and a
caller blocked in job.get() wakes with JobCanceled (the outcome list holds `canceled:` for
DONE_GRACE seconds).

KEYS[1]          seq                 INCR counter
KEYS[2]          events              the event stream
KEYS[3..]        job:<id>            the hash of each job, in the order of the ids

ARGV[1]          namespace prefix "{ns}:"
ARGV[2]          queue name the jobs must belong to, or "" (any queue)
ARGV[3]          seconds the outcome list `canceled:` lasts for waiters
ARGV[4..]        job ids

Returns {deleted, running}: how many were deleted, how many were left running. With a
queue given, every id leaves that queue's sets (also one of no job, counted in neither).
]]
--#context NS=ARGV[1] SEQ=KEYS[1] EVENTS=KEYS[2] WORKER=''
--#include clock
--#include keys
--#include jobs
--#include limits
--#include removal

local only, grace = ARGV[2], tonumber(ARGV[3])
local function forget(queue, id)
  for _, name in ipairs({'q:', 'scheduled:', 'deferred:', 'finished:', 'failed:',
      'failed_expiry:'}) do
    redis.call('ZREM', NS .. name .. queue, id)
  end
end

local deleted, running = 0, 0
for i = 4, #ARGV do
  local id, key = ARGV[i], KEYS[i - 1]
  local status = redis.call('HGET', key, 'status')
  local queue = redis.call('HGET', key, 'queue') or 'default'
  -- Out of the given queue's sets whatever it is, so that q.delete()'s passes end.
  if only ~= '' then forget(only, id) end
  if status == 'started' then
    running = running + 1
  elseif status and (only == '' or queue == only) then
    forget(queue, id)
    if status == 'queued' then forget_parked(id, key, queue) end
    remove_job(id, key, status, grace)
    deleted = deleted + 1
  end
end
return {deleted, running}
