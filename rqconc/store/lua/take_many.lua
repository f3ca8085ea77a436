--[[ take_many: lease up to n waiting jobs at once, each under a claim of its own.

For a worker child whose several slots are idle at once (`--slots`, the asyncio backend):
one step instead of one per slot. Each job is taken exactly as take.lua takes one (due
scheduled jobs promoted, best job of the first non-empty listened queue, leased, started,
fenced by its own claim), so every later step about it (renew, complete, fail, requeue,
recovery of a dead child's claims) is per job, as after a plain take. A claim revoked
meanwhile (its slot was ended) takes nothing and the next claim is tried.

KEYS[1]          seq                 INCR counter for the scores of promoted jobs
KEYS[2]          active              leased jobs, score = lease deadline (ms)
KEYS[3]          claims              claim -> job id
KEYS[4]          events              the event stream
KEYS[4i+1]       q:<queue>           for the i-th listened queue (i = 1..nq), in take order:
KEYS[4i+2]       marker:<queue>        its wake-up marker,
KEYS[4i+3]       scheduled:<queue>     its delayed jobs,
KEYS[4i+4]       started:<queue>       its running jobs (score = start time, ms)

ARGV[1]          lease length (ms)
ARGV[2]          worker name
ARGV[3]          namespace prefix "{ns}:" (see take.lua)
ARGV[4..]        the claims (fencing tokens), one per job wanted, in the order to fill
(The promote batch: include/take.lua's PROMOTE_BATCH, as in take.lua.)

Returns {{claim, id, v1, v2, ...}, ...}: one entry per job taken, the claim it was leased
        under followed by what take.lua returns for it (TAKE_FIELDS of include/take.lua); or,
        when no job was taken, what take.lua returns then: the delay (ms, >= 0, by Redis'
        clock) until the earliest scheduled job of the listened queues is due, or -1.
]]
--#context NS=ARGV[3] SEQ=KEYS[1] EVENTS=KEYS[4] WORKER=ARGV[2]
--#include clock
--#include state
--#include gather
--#include take

local lease_ms, nq = tonumber(ARGV[1]), (#KEYS - 4) / 4
local jobs, last = {}, -1
takes_clear({unpack(ARGV, 4)}, 5, nq)  -- one EXISTS for every claim and queue, when all clear
gathering()  -- the registries' writes of every take, once per key at the end (include/gather)
for i = 4, #ARGV do
  local claim = ARGV[i]
  if TAKES_FREE or redis.call('EXISTS', NS .. 'revoked:' .. claim) == 0 then
    -- Only the last take may leave jobs behind for another idle child: it re-arms markers.
    last = take_next(claim, lease_ms, KEYS[2], KEYS[3], 5, nq, i == #ARGV)
    if type(last) ~= 'table' then break end  -- every listened queue is empty
    table.insert(last, 1, claim)
    table.insert(jobs, last)
    last = -1
  end
end
gathered_flush()
if #jobs == 0 then return last end
-- A batch cut short by an empty queue left no job to wake anyone for; one that filled
-- every claim re-armed the markers in its last take.
return jobs
