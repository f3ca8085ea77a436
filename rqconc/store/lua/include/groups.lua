--[[ groups: a group's members settled as they end for good, and its chord fired by the
last (queue/groups.py). Context: NS.
]]
--#needs NS
--#include keys
--#include jobs

-- Groups (queue/groups.py): group:<id> holds the member ids in order (`jobs`), how many have
-- not finished (`pending`), `state` (running, done, failed), the chord callback's id
-- (`chord_id`; that job waits `deferred`, with `chord_of`) and, per member index i, `r<i>`:
-- its serialized result (a chord's) or "" once it finished. `results_kept`: "1" from the
-- chord's firing until its callback ended (include/jobs.lua chord_ended).

-- The group ended: the results go, and its record expires like a result would; except a
-- fired chord's, which its callback reads by reference when it runs: they stay until the
-- callback ended.
--#cold
local function end_group(g, state, results_kept)
  redis.call('HSET', g, 'state', state)
  if results_kept then
    redis.call('HSET', g, 'results_kept', '1')
    return
  end
  drop_group_results(g)
  local ttl = ttl_of(g, 'ttl', DEFAULT_RESULT_TTL)
  if ttl > 0 then redis.call('EXPIRE', g, ttl) end
end

-- The chord callback of a finished group goes into its queue. Its results stay in the
-- group's record, where the worker reads them when it runs the callback (`chord_of` names
-- the group; queue/execution.py): this step writes O(1), whatever their number and size
-- (a copy into the callback's hash took Redis O(total bytes) here, 296 ms for 6 x 3 MB).
-- Returns whether it fired (a callback canceled by a user does not).
--#cold
local function fire_chord(chord)
  local key = job_key(chord)
  if redis.call('HGET', key, 'status') ~= 'deferred' then return false end
  redis.call('ZREM', deferred_key(redis.call('HGET', key, 'queue') or 'default'), chord)
  push_queued(chord, key, false)
  return true
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
  end_group(g, 'done', chord and fire_chord(chord))
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
