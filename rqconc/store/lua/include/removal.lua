--[[ removal: a job removed from Redis (job.delete(), q.delete(), q.empty()) ends here, the
one way every removing step shares. Context: NS (and, through dependents, SEQ and NOW).
]]
--#needs NS
--#include keys
--#include jobs
--#include dependents

-- The job's hash, outcome list, dependents set and log go. A job removed before it ended is a
-- job that did not finish, as a failed one: its unique key ends (unique_ended), its group
-- fails and its chord callback is canceled, its dependents are canceled (or released if
-- they allow failure), and a caller blocked in job.get() wakes with JobCanceled (the
-- outcome list holds `canceled:` for `grace` seconds). All that reads the hash (group_id,
-- unique_key), so it runs before the hash goes. A removed chord callback, ended or not, lets
-- its group's kept results go (chord_ended): nothing can run it again.
local function remove_job(id, key, status, grace)
  local ended = status == 'finished' or status == 'failed' or status == 'canceled'
  local f = redis.call('HMGET', key, 'unique_key', 'unique_for', 'chord_of')
  if f[3] then chord_ended(f[3], nil) end
  if not ended then
    unique_ended(id, f[1], f[2])
    settle_dependents(id, false)
  end
  redis.call('DEL', key)
  local done = done_key(id)
  redis.call('DEL', done)
  if not ended then
    redis.call('RPUSH', done, 'canceled:')
    redis.call('EXPIRE', done, grace)
  end
  redis.call('DEL', dependents_key(id), log_key(id))
end
