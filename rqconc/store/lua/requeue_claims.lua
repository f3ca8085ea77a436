--[[ requeue_claims: put the jobs these claims hold back at the FRONT of their queues,
untouched (include/requeue.lua's requeue_held, as requeue_front does for one claim).

A cold shutdown ends every child at once; their jobs are interruptions, not failed
attempts. One step for all the claims of the ended children, not three round trips a job
(the claim's job, its hash, requeue_front): the supervisor is to be gone within 1 s of the
second signal (SPEC 2), with hundreds of jobs in flight on an asyncio or --slots worker.
Claims are taken in order, so the last one's job ends up first, as one requeue_front after
another would leave them.

KEYS[1]          seq                 INCR counter
KEYS[2]          active              leased jobs
KEYS[3]          claims              claim -> job id
KEYS[4]          events              the event stream
KEYS[5]          canceling           jobs asked to stop while running
(each job's job:<id> and started:<queue> are built from NS: include/keys.lua)

ARGV[1]          namespace prefix "{ns}:"
ARGV[2]          worker name
ARGV[3]          the event to record ("interrupted")
ARGV[4...]       the claims

Returns {id, queue, func, ...}: each job put back (or canceled, when it was asked to stop),
in claim order ("" for a hash without queue or function); a claim that holds no job, or no
longer holds it, is skipped.
]]
--#context NS=ARGV[1] SEQ=KEYS[1] EVENTS=KEYS[4] WORKER=ARGV[2]
--#include clock
--#include keys
--#include requeue

local done = {}
for i = 4, #ARGV do
  local claim = ARGV[i]
  local id = redis.call('HGET', KEYS[3], claim)
  if id then
    local key = job_key(id)
    local queue, func = unpack(redis.call('HMGET', key, 'queue', 'func'), 1, 2)
    queue = queue or ''
    if requeue_held(claim, id, key, started_key(queue), ARGV[3], true, KEYS[2], KEYS[3],
        KEYS[5]) == 1 then
      local n = #done
      done[n + 1], done[n + 2], done[n + 3] = id, queue, func or ''
    end
  end
end
return done
