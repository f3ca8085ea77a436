--[[ gather: a step's registry writes sent as one command per key (used by the steps that
end and start many runs at once: complete_many, take_many).

Every job's run is written into three registries when it starts and again when it ends:
claims (claim -> job id), active (lease expiry) and started:<queue>; a job kept for 0 s also
has its hash deleted. One at a time, that is seven commands per job; a command costs Redis
a few thousand instructions besides its members (a ZADD of one member about 10,000, of
eight members together about 4,500 per member: issue 21, callgrind). A step that handles
many jobs calls `gathering` first: `registry_write` then notes each write instead of
sending it, and `gathered_flush` sends, per key, one removing and one adding command for
all of them (plus one DEL of the hashes): about 10,000 instructions less per job for
eight slots (bench/step_cost.py). Without it, `registry_write` writes at once, so the
one-job steps share the code.

What a gathered write relies on (tests/store/test_complete_many.py drives the cases):
- Within one step, every removal concerns a run that began before the step (the claim and
  job a completion presents, or a taken job's previous token) and every addition a run that
  begins in it (a take's new claim and job): no member is added and then removed in one
  step. So the flush sends each key's removals first and its additions after, and the
  jobs' order within the step cannot matter. (Measured: keeping each member's net effect
  instead, in a table per member, cost more than the commands it saved.)
- Nothing in the step reads a gathered key before the flush, except flow control
  (include/limits.lua: queue caps count started:<queue>), and each of its entries flushes
  first. A
  caller of `registry_write` never needs the write's reply.
- A job hash is only deleted (ttl 0) once its step has read everything it needs from it;
  complete_many refuses a job that appears twice in one step, which the still present hash
  would otherwise let complete twice.
]]
--#include state

-- GATHERED: false, write at once. Else key -> {removed members, added pairs, whether a
-- hash}, the keys in order at 1..n, and `deleted`: the job hashes to DEL.
local function gathering() GATHERED = {deleted = {}} end

-- ZADD key score member, ZREM key member, HSET key field value or HDEL key field.
local function registry_write(command, key, a, b)
  local gathered = GATHERED
  if not gathered then
    if b then return redis.call(command, key, a, b) end
    return redis.call(command, key, a)
  end
  local entry = gathered[key]
  if not entry then
    entry = {{}, {}, command == 'HSET' or command == 'HDEL'}
    gathered[key] = entry
    gathered[#gathered + 1] = key
  end
  if b then
    local added = entry[2]
    added[#added + 1], added[#added + 2] = a, b
  else
    entry[1][#entry[1] + 1] = a
  end
end

local function job_deleted(key)
  local gathered = GATHERED
  if not gathered then return redis.call('DEL', key) end
  gathered.deleted[#gathered.deleted + 1] = key
end

-- Send what was noted; the step goes on gathering (limits flushes in mid-step).
local function gathered_flush()
  local gathered = GATHERED
  if not gathered then return end
  GATHERED = {deleted = {}}
  for _, key in ipairs(gathered) do
    local removed, added, hash = unpack(gathered[key])
    if #removed > 0 then redis.call(hash and 'HDEL' or 'ZREM', key, unpack(removed)) end
    if #added > 0 then redis.call(hash and 'HSET' or 'ZADD', key, unpack(added)) end
  end
  if #gathered.deleted > 0 then redis.call('DEL', unpack(gathered.deleted)) end
end
