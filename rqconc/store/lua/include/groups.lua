--[[ groups: a group's members settled as they end for good, and its chord fired by the
last (queue/groups.py). Context: NS.
]]
--#needs NS
--#include keys
--#include jobs

-- Groups (queue/groups.py): group:<id> holds the member ids in order (`jobs`), how many have
-- not finished (`pending`), `state` (running, done, failed), the chord callback's id
-- (`chord_id`; that job waits `deferred`, with `chord_of`) and, per member index i, `r<i>`:
-- its serialized result (a chord's) or "" once it finished.

-- The group ended: the kept results go, and its record expires like a result would.
--#cold
local function end_group(g, state)
  redis.call('HSET', g, 'state', state)
  local n = tonumber(redis.call('HGET', g, 'total')) or 0
  for first = 1, n, 1000 do
    local fields = {}
    for i = first, math.min(first + 999, n) do fields[#fields + 1] = 'r' .. i end
    redis.call('HDEL', g, unpack(fields))
  end
  local ttl = ttl_of(g, 'ttl', DEFAULT_RESULT_TTL)
  if ttl > 0 then redis.call('EXPIRE', g, ttl) end
end

-- The chord callback of a finished group, with the members' results in group order.
--#cold
local function fire_chord(g, chord, n)
  local key = job_key(chord)
  if redis.call('HGET', key, 'status') ~= 'deferred' then return end  -- canceled by a user
  local results = {}
  for first = 1, n, 1000 do
    local fields = {}
    for i = first, math.min(first + 999, n) do fields[#fields + 1] = 'r' .. i end
    for _, value in ipairs(redis.call('HMGET', g, unpack(fields))) do
      results[#results + 1] = value
    end
  end
  redis.call('ZREM', deferred_key(redis.call('HGET', key, 'queue') or 'default'), chord)
  redis.call('HSET', key, 'chord_results', cjson.encode(results))
  push_queued(chord, key, false)
end

-- Member `index` of group `group_id` finished for good (complete). HSETNX counts each
-- member once, whatever runs twice; the step that finishes the last one fires the chord.
-- A retry or a lease recovery is no end: only this step and a final failure settle.
--#cold
local function group_member_finished(group_id, index, result)
  local g = group_key(group_id)
  if redis.call('HGET', g, 'state') ~= 'running' then return end
  local chord = redis.call('HGET', g, 'chord_id')
  if redis.call('HSETNX', g, 'r' .. index, chord and result or '') == 0 then return end
  if redis.call('HINCRBY', g, 'pending', -1) > 0 then return end
  if chord then fire_chord(g, chord, tonumber(redis.call('HGET', g, 'total')) or 0) end
  end_group(g, 'done')
end

-- A member ended without finishing (failed for good, poison pill, canceled): the group
-- failed and its chord callback is canceled; returns the callback's id if it was.
--#cold
local function group_member_failed(id)
  local group_id = redis.call('HGET', job_key(id), 'group_id')
  if not group_id then return nil end
  local g = group_key(group_id)
  if redis.call('HGET', g, 'state') ~= 'running' then return nil end
  end_group(g, 'failed')
  local chord = redis.call('HGET', g, 'chord_id')
  if chord and redis.call('HGET', job_key(chord), 'status') == 'deferred' then
    mark_canceled(chord, job_key(chord), 'job ' .. id .. ' of its group did not finish')
    return chord
  end
  return nil
end
