--[[ trim_events: retention of the event stream, and the count of what it drops unread.

Maintenance, run by one supervisor per interval (RedisSource.maintain), off the per-job
path: no step's XADD trims (SPEC 18, issue 36). Every entry newer than the retention is
kept, up to the cap; the oldest entries beyond either go. An entry that goes before every
consumer group acknowledged it (newer than a group's last-delivered-id, or in a group's
pending list) is lost to a shipper: those are counted in {ns}:metrics `events_dropped`
(rqconc_events_dropped_total). Redis 6.2 has no `entries-read`/`lag` (7.0), so the entries
to drop are read and each one compared with every group's last-delivered-id and pending
list: at most ARGV[3] entries per call (the caller calls again while it returns more = 1),
each call holding Redis about a millisecond. Without a consumer group no reader can lose
an entry: the stream is trimmed by XTRIM alone and nothing is counted.

KEYS[1]          events                 the event stream
KEYS[2]          metrics                the namespace's totals (field events_dropped)

ARGV[1]          retention (ms): entries older than this (Redis' clock) go
ARGV[2]          cap: the most entries kept
ARGV[3]          the most entries one call drops when a consumer group exists

Returns {removed, dropped, more}: entries removed, those of them counted as dropped, and 1
when this call stopped at ARGV[3] with more due.
]]
--#include clock
local stream, cap, chunk = KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- Entries whose millisecond is before this one are older than the retention.
local oldest_kept_ms = math.max(0, tonumber(NOW) - tonumber(ARGV[1]))
local min_id = string.format('%d', oldest_kept_ms) .. '-0'

local n = redis.call('XLEN', stream)
if n == 0 then return {0, 0, 0} end
local groups = redis.call('XINFO', 'GROUPS', stream)
if #groups == 0 then
  local removed = redis.call('XTRIM', stream, 'MINID', min_id)
  removed = removed + redis.call('XTRIM', stream, 'MAXLEN', cap)
  return {removed, 0, 0}
end

-- Stream ids compare as (milliseconds, sequence) pairs.
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)%-(%d+)$')
  return {tonumber(ms), tonumber(seq)}
end
local function before(a, b)
  return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2])
end

local over = n - cap  -- how many of the oldest entries the cap drops
local head = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)
if over <= 0 and parse(head[1][1])[1] >= oldest_kept_ms then return {0, 0, 0} end

local entries = redis.call('XRANGE', stream, '-', '+', 'COUNT', chunk)
local due, ids = 0, {}
for i, entry in ipairs(entries) do
  local id = parse(entry[1])
  if i > over and id[1] >= oldest_kept_ms then break end
  due, ids[i] = i, id
end
if due == 0 then return {0, 0, 0} end

-- The oldest last-delivered-id of all groups, and the ids any group has pending up to the
-- last entry that goes (a group's reply is flat: name, value, ...).
local last_due = entries[due][1]
local read_up_to, pending = nil, {}
for _, group in ipairs(groups) do
  local name, delivered
  for j = 1, #group, 2 do
    if group[j] == 'name' then name = group[j + 1] end
    if group[j] == 'last-delivered-id' then delivered = parse(group[j + 1]) end
  end
  if read_up_to == nil or before(delivered, read_up_to) then read_up_to = delivered end
  -- From the first entry: the ids of entries trimmed before stay pending until acknowledged.
  for _, held in ipairs(redis.call('XPENDING', stream, name, entries[1][1], last_due, due)) do
    pending[held[1]] = true
  end
end

local dropped = 0
for i = 1, due do
  if before(read_up_to, ids[i]) or pending[entries[i][1]] then dropped = dropped + 1 end
end
-- Exact: the `due` oldest entries, nothing else (the script runs alone).
redis.call('XTRIM', stream, 'MAXLEN', n - due)
if dropped > 0 then redis.call('HINCRBY', KEYS[2], 'events_dropped', dropped) end
local more = 0
if due == chunk then more = 1 end
return {due, dropped, more}
