--[[ complete_many: record the return values of several jobs of one worker process, and
take each slot's next job, in one step.

The slots of one process (`--slots`, the threading, gevent and asyncio backends) that
finish jobs while another completion of theirs is on its way to Redis send theirs together
(rqconc/worker/completions.py): under load, the request, the script's set-up and
its clock are paid once for many jobs instead of once per job (issue 21). Each job is
completed exactly as complete.lua completes one (include/complete.lua), then, when its slot
gave a next claim, that slot's next job is taken as complete.lua takes it: so every later
step about either is per job, as after a single complete. A job with a flow's next stage is
never sent here (complete.lua takes it alone).

KEYS[1]          active              leased jobs
KEYS[2]          claims              claim -> job id
KEYS[3]          seq                 INCR counter
KEYS[4]          events              the event stream
KEYS[5..4+4nq]   the listened queues of the next takes, 4 keys each, as in take
                 (q, marker, scheduled, started)
KEYS[5+4nq+3(i-1)..]  for the i-th job: job:<id>, started:<queue>, finished:<queue>
(done:<id> and canceling, needed on rare paths only, are built from NS as complete.lua's;
the promote batch and done:<id>'s grace are constants of the includes, as there.)

ARGV[1]          namespace prefix "{ns}:"
ARGV[2]          worker name
ARGV[3]          lease length (ms) of the next takes
ARGV[4]          nq, the number of listened queues
ARGV[5]          n, the number of jobs
ARGV[6+5(i-1)..] for the i-th job: claim, job id, serialized return value, serializer's
                 name, the slot's next claim ("" to take nothing)

Returns {{code, next}, ...}: per job in order, code as complete.lua's (1 recorded, -1 stale
claim: nothing written for that job) and, when its slot gave a next claim and the job was
recorded, what take returns (the job's fields, or the delay until the earliest due time /
-1); once a take found nothing, the later slots take nothing either (next = -1 when no
scheduled job is due sooner, as take answers). A stale job takes nothing, as in complete;
a revoked next claim takes nothing (-1) and the later slots still take.
]]
--#context NS=ARGV[1] SEQ=KEYS[3] EVENTS=KEYS[4] WORKER=ARGV[2] ACTIVE=KEYS[1] CLAIMS=KEYS[2]
--#include clock
--#include state
--#include keys
--#include metrics
--#include gather
--#include events
--#include take
--#include complete

local lease_ms, nq, n = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local replies, empty = {}, nil  -- empty: what the first take that found nothing answered
metrics_summed()  -- the runs' counters and histograms: one HINCRBY per field, at the end
-- One EXISTS for the whole step: whether any next claim is revoked, any listened queue has
-- limits (take.lua) or any job here has dependents to release (a second one tells
-- which, when one does).
local next_claims, dependents = {}, {}
for i = 1, n do
  local a = 6 + 5 * (i - 1)
  if ARGV[a + 4] ~= '' then next_claims[#next_claims + 1] = ARGV[a + 4] end
  dependents[i] = dependents_key(ARGV[a + 1])
end
local found = takes_clear(next_claims, 5, nq, dependents)
NO_DEPENDENTS = found == 0 or takes_told(found, dependents, false) == 0
-- The registries' writes of every job, and the deletes of the hashes of jobs kept for 0 s,
-- go at the end, once per key (include/gather.lua).
gathering()
local seen = {}  -- job ids: a job twice in one step is refused (its hash is deleted last)
for i = 1, n do
  local a, k = 6 + 5 * (i - 1), 5 + 4 * nq + 3 * (i - 1)
  local next_claim, id = ARGV[a + 4], ARGV[a + 1]
  local chained = next_claim ~= '' and empty == nil
  local code = -1
  if not seen[id] then
    seen[id] = true
    code = complete_job(ARGV[a], id, ARGV[a + 2], ARGV[a + 3], KEYS[k], KEYS[k + 1],
      KEYS[k + 2], chained, nil)
  end
  local reply = {code}
  if code == 1 and next_claim ~= '' then
    if empty ~= nil then
      reply[2] = empty
    elseif not TAKES_FREE and redis.call('EXISTS', NS .. 'revoked:' .. next_claim) == 1 then
      reply[2] = -1  -- its slot was ended meanwhile: it takes nothing, the others go on
    else
      local taken = take_next(next_claim, lease_ms, ACTIVE, CLAIMS, 5, nq, false)
      if type(taken) ~= 'table' then empty = taken end
      reply[2] = taken
    end
  end
  flush_events()  -- `finished` alone when nothing was taken
  replies[i] = reply
end
metrics_flush()
gathered_flush()
return replies
