--[[ dependents: the jobs waiting on a job that ended, released or canceled in the step that
ends it (depends_on). Context: NS.
]]
--#needs NS
--#include keys
--#include jobs
--#include groups

-- The parent ended: on success (or for dependents that allow failure) one parent less to
-- wait for; on a final failure the dependents are canceled, and theirs in turn.
--#cold
local function settle_found_dependents(parent_id, parent_ok)
  local work = {{parent_id, parent_ok}}
  while #work > 0 do
    local item = table.remove(work)
    if not item[2] then  -- every final failure passes here: its group's chord is canceled
      local chord = group_member_failed(item[1])
      if chord then table.insert(work, {chord, false}) end
    end
    local set = dependents_key(item[1])
    local children = redis.call('ZRANGE', set, 0, -1)  -- in the order they were enqueued
    if #children > 0 then redis.call('DEL', set) end  -- most jobs have none: one call
    for _, child in ipairs(children) do
      local key = job_key(child)
      if redis.call('HGET', key, 'status') == 'deferred' then
        if item[2] or redis.call('HGET', key, 'allow_failure') == '1' then
          local left = (tonumber(redis.call('HGET', key, 'pending_deps')) or 1) - 1
          redis.call('HSET', key, 'pending_deps', left)
          if left <= 0 then release(child, key) end
        else
          mark_canceled(child, key, 'job ' .. item[1] .. ', which it depends on, did not finish')
          table.insert(work, {child, false})
        end
      end
    end
  end
end

-- Every job that ends passes here, and most have no dependents and end well: one EXISTS,
-- and the cold functions are not made (build/cold.py).
local function settle_dependents(parent_id, parent_ok)
  if parent_ok and redis.call('EXISTS', dependents_key(parent_id)) == 0 then return end
  settle_found_dependents(parent_id, parent_ok)
end
