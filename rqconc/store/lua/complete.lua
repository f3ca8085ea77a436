--[[ complete: record a job's return value (include/complete.lua's complete_job), and take
the worker's next job in the same step when it gives a next claim.

KEYS[1]          active              leased jobs
KEYS[2]          claims              claim -> job id
KEYS[3]          job:<id>            the job's hash
KEYS[4]          started:<queue>     running jobs of its queue
KEYS[5]          finished:<queue>    finished jobs, score = expiry time (ms; +inf: kept forever)
KEYS[6]          done:<id>           completion list (pushed only when job.get() waits)
KEYS[7]          seq                 INCR counter
KEYS[8]          events              the event stream
KEYS[9]          canceling           jobs asked to stop while running
KEYS[10..]       with a next claim: 4 keys per listened queue, as in take
                 (q, marker, scheduled, started), nq queues
KEYS[10+4nq..]   with a next stage: queues, job:<next id>, done:<next id>

ARGV[1]          claim
ARGV[2]          job id
ARGV[3]          the serialized return value
ARGV[4]          the serializer's name ("json" or "pickle")
ARGV[5]          seconds done:<id> lives when result_ttl is 0 (so current waiters see it)
ARGV[6]          namespace prefix "{ns}:"
ARGV[7]          worker name
ARGV[8]          the next claim, or "" to take nothing
ARGV[9]          lease length (ms) of the next take
ARGV[10]         how many due scheduled jobs to promote per queue at most
ARGV[11]         nq, the number of listened queues (0 without a next claim)
ARGV[12...]      with a next stage: its id, queue name, k, then k field/value pairs

Returns {1} when recorded, {1, next} when recorded and a next claim was given (next as the
take step returns it: the job's fields, or the delay until the earliest due time / -1), {-1} when the claim
is stale, {-2, next id} when a job with the next stage's id exists (in both refusals
nothing is written, nothing taken).
]]
--#context NS=ARGV[6] SEQ=KEYS[7] EVENTS=KEYS[8] WORKER=ARGV[7] ACTIVE=KEYS[1] CLAIMS=KEYS[2] CANCELING=KEYS[9]
--#include clock
--#include state
--#include keys
--#include events
--#include take
--#include complete

local nq = tonumber(ARGV[11])
local stage = nil
if ARGV[12] then  -- a next stage: its id, queue, fields, then its three keys
  local k, first = tonumber(ARGV[14]), 10 + 4 * nq
  stage = {ARGV[12], ARGV[13], {unpack(ARGV, 15, 14 + 2 * k)}, KEYS[first], KEYS[first + 1],
    KEYS[first + 2]}
end
local chained = ARGV[8] ~= ''
if chained then  -- one EXISTS: dependents to release, the next claim revoked, limits
  local also = {dependents_key(ARGV[2])}
  local found = takes_clear({ARGV[8]}, 10, nq, also)
  NO_DEPENDENTS = found == 0 or takes_told(found, also, true) == 0
end
local code = complete_job(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], KEYS[3], KEYS[4],
  KEYS[5], KEYS[6], chained, stage)
if code == -2 then
  return {-2, ARGV[12]}
end
if code ~= 1 or not chained then
  return {code}
end
local taken = take_next(ARGV[8], tonumber(ARGV[9]), ARGV[10], ACTIVE, CLAIMS, 10, nq, false)
flush_events()  -- `finished` alone when nothing was taken
return {1, taken}
