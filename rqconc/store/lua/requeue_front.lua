--[[ requeue_front: put a leased job back at the FRONT of its queue, untouched (or, for a
job the worker's allow-list refuses, at its back).

Used when a child received a job it may not start (give-back, event "requeued"), for jobs
interrupted by a cold shutdown (event "interrupted") and for jobs a worker's allow-list
refuses (event "refused"): none is a failed attempt, so `attempts` is left alone. The score
puts it ahead of every waiting job of its priority; a refused job goes behind them, so one
job no worker allows cannot stand in front of the jobs that can run.
A job that was asked to stop (canceled while running) is canceled instead.

KEYS[1]          seq                 INCR counter
KEYS[2]          active              leased jobs
KEYS[3]          claims              claim -> job id
KEYS[4]          job:<id>            the job's hash
KEYS[5]          started:<queue>     running jobs of its queue
KEYS[6]          events              the event stream
KEYS[7]          canceling           jobs asked to stop while running

ARGV[1]          claim
ARGV[2]          job id
ARGV[3]          namespace prefix "{ns}:"
ARGV[4]          worker name
ARGV[5]          the event to record: "requeued", "interrupted" or "refused"
ARGV[6]          "back": behind the waiting jobs of its priority (a refusal); else the front

Returns 1 when requeued (or canceled), 0 when the claim is unknown or stale (a no-op).
]]
--#context NS=ARGV[3] SEQ=KEYS[1] EVENTS=KEYS[6] WORKER=ARGV[4]
--#include clock
--#include requeue

local claim, id = ARGV[1], ARGV[2]
if redis.call('HGET', KEYS[3], claim) ~= id then
  return 0
end
return requeue_held(claim, id, KEYS[4], KEYS[5], ARGV[5], ARGV[6] ~= 'back', KEYS[2], KEYS[3],
  KEYS[7])
