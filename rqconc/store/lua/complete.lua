--[[ complete: record a job's return value (include/complete.lua's complete_job), and take
the worker's next job in the same step when it gives a next claim.

KEYS[1]          active              leased jobs ("{ns}:active": the step's NS is its prefix)
KEYS[2]          claims              claim -> job id
KEYS[3]          job:<id>            the job's hash
KEYS[4]          started:<queue>     running jobs of its queue
KEYS[5]          finished:<queue>    finished jobs, score = expiry time (ms; +inf: kept forever)
KEYS[6]          seq                 INCR counter
KEYS[7]          events              the event stream
KEYS[8..]        with a next claim: 4 keys per listened queue, as in take
                 (q, marker, scheduled, started), nq queues
KEYS[8+4nq..]    with a next stage: queues, job:<next id>, done:<next id>
(done:<id> and canceling, needed on rare paths only, are built from NS: include/keys.lua;
done:<id>'s grace and the promote batch are include/complete.lua's and include/take.lua's
constants. Every key and argument costs each call ~1,150 Redis instructions.)

ARGV[1]          claim
ARGV[2]          job id
ARGV[3]          the serialized return value
ARGV[4]          the serializer's name ("json" or "pickle")
ARGV[5]          worker name
ARGV[6]          the next claim, or "" to take nothing
ARGV[7]          lease length (ms) of the next take
ARGV[8]          nq, the number of listened queues (0 without a next claim)
ARGV[9...]       with a next stage: its id, queue name, k, then k field/value pairs

Returns {1} when recorded, {1, next} when recorded and a next claim was given (next as the
take step returns it: the job's fields, or the delay until the earliest due time / -1), {-1} when the claim
is stale, {-2, next id} when a job with the next stage's id exists (in both refusals
nothing is written, nothing taken).
]]
--#context NS=string.sub(KEYS[1],1,-7) SEQ=KEYS[6] EVENTS=KEYS[7] WORKER=ARGV[5] ACTIVE=KEYS[1] CLAIMS=KEYS[2]
--#include clock
--#include state
--#include keys
--#include events
--#include take
--#include complete

local nq = tonumber(ARGV[8])
local stage = nil
if ARGV[9] then  -- a next stage: its id, queue, fields, then its three keys
  local k, first = tonumber(ARGV[11]), 8 + 4 * nq
  stage = {ARGV[9], ARGV[10], {unpack(ARGV, 12, 11 + 2 * k)}, KEYS[first], KEYS[first + 1],
    KEYS[first + 2]}
end
local chained = ARGV[6] ~= ''
if chained then  -- one EXISTS: dependents to release, the next claim revoked, limits
  local dependents = dependents_key(ARGV[2])
  local found = takes_clear_one(ARGV[6], 8, nq, dependents)
  NO_DEPENDENTS = found == 0 or takes_told(found, {dependents}, true) == 0
end
local code = complete_job(ARGV[1], ARGV[2], ARGV[3], ARGV[4], KEYS[3], KEYS[4], KEYS[5],
  chained, stage)
if code == -2 then
  return {-2, ARGV[9]}
end
if code ~= 1 or not chained then
  return {code}
end
local taken = take_next(ARGV[6], tonumber(ARGV[7]), ACTIVE, CLAIMS, 8, nq, false)
flush_events()  -- `finished` alone when nothing was taken
return {1, taken}
