--[[ take: lease the best waiting job of the first non-empty listened queue.

Before popping, due scheduled jobs of the listened queues are promoted (a bounded batch
per queue, so a take costs the same however many jobs wait). The claim the caller made up
becomes the job's fencing token: every later step about this run must present it.

KEYS[1]          seq                 INCR counter for the scores of promoted jobs
KEYS[2]          active              leased jobs, score = lease deadline (ms)
KEYS[3]          claims              claim -> job id
KEYS[4]          events              the event stream
KEYS[4i+1]       q:<queue>           for the i-th listened queue (i = 1..n), in take order:
KEYS[4i+2]       marker:<queue>        its wake-up marker,
KEYS[4i+3]       scheduled:<queue>     its delayed jobs,
KEYS[4i+4]       started:<queue>       its running jobs (score = start time, ms)

ARGV[1]          claim (fencing token)
ARGV[2]          lease length (ms)
ARGV[3]          worker name
ARGV[4]          namespace prefix "{ns}:": the popped id is only known here, so its hash
                 key is completed from it (the pattern of keys.py)
(How many due scheduled jobs to promote per queue at most: include/take.lua's
PROMOTE_BATCH, as for every step that takes.)

Returns {id, v1, v2, ...}: the taken job's TAKE_FIELDS (include/take.lua), already marked
        started; or, when every listened queue is empty, the delay (ms, >= 0, by Redis'
        clock) until the earliest of their scheduled jobs is due, or -1 when none is
        scheduled.
]]
--#context NS=ARGV[4] SEQ=KEYS[1] EVENTS=KEYS[4] WORKER=ARGV[3]
--#include clock
--#include take

-- A child that takes here may have been woken by a marker: re-arm them (rearm = true).
return take_next(ARGV[1], tonumber(ARGV[2]), KEYS[2], KEYS[3], 5, (#KEYS - 4) / 4, true)
