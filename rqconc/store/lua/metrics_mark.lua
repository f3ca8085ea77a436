--[[ metrics_mark: copy the run buckets, failed runs and failures of {ns}:metrics as they stand
now into this minute's {ns}:metrics:<minute>, unless this minute has its copy already.

The per-minute timeline (rqconc/metrics/read.py timeline(): finished, failed, run-time
quantiles per minute of the last hour) is the difference between one minute's copy and the
next (the current minute's: the totals now). Jobs pay nothing for it; each supervisor asks
once per tick (duties.py) and only the first ask of a minute copies. A minute in which no
worker ran has no copy: the reader counts what changed since the previous copy in the next
minute that has one (nothing finishes while no worker runs).

KEYS[1]          metrics               the namespace's totals (include/metrics.lua)
ARGV[1]          namespace prefix "{ns}:" (the minute's key is named here, from Redis'
                 clock: it shares the hash tag)

Every ask also makes sure the totals are a hash table, not a listpack: a hash of up to
128 short fields (hash-max-listpack-*) is a listpack, which every HINCRBY of every job scans
field by field and rewrites (a namespace's few dozen fields: 1.5-2.4 us a HINCRBY against
1.1-1.3 us in a hash table, 4 a job). A value longer than 64 bytes converts a hash for good,
so the totals keep one such field (LAYOUT_FIELD, not an integer: readers skip it); after a
DEL of the totals (a reset) the next tick's ask converts them again.

Returns 1 when it copied, 0 when this minute had its copy.
]]
--#context NS=ARGV[1]
--#include clock
--#include metrics

local METRIC_MINUTE_TTL = 3720  -- an hour after its minute, and the minute itself
local HSET_BATCH = 500  -- field/value pairs per HSET: unpack() has a stack limit

local LAYOUT_FIELD = 'layout'
local LAYOUT_NOTE = 'a hash table, not a listpack: every job increments these fields '
  .. '(lua/metrics_mark.lua)'

redis.call('HSETNX', KEYS[1], LAYOUT_FIELD, LAYOUT_NOTE)
local minute = math.floor(tonumber(NOW) / 60000) * 60
local key = metrics_minute_key(minute)
if redis.call('EXISTS', key) == 1 then
  return 0
end
local totals = redis.call('HGETALL', KEYS[1])
local copied = {'at', NOW}  -- never empty: a minute without any total still has its copy
for i = 1, #totals, 2 do
  local name = totals[i]
  if string.sub(name, 1, 4) == 'run:' or string.sub(name, 1, 7) == 'failed:'
      or string.sub(name, 1, 11) == 'run_failed:' then
    copied[#copied + 1] = name
    copied[#copied + 1] = totals[i + 1]
    if #copied >= 2 * HSET_BATCH then
      redis.call('HSET', key, unpack(copied))
      copied = {}
    end
  end
end
if #copied > 0 then redis.call('HSET', key, unpack(copied)) end
redis.call('EXPIRE', key, METRIC_MINUTE_TTL)
return 1
