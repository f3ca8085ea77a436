--[[ followups: the on_success / on_failure callbacks and webhooks of a job that ended,
created in the step that ends it. Context: NS, NOW.
]]
--#needs NS NOW
--#include keys
--#include jobs
--#include metrics

-- Follow-up jobs (on_success/on_failure callbacks, webhooks), prepared at enqueue time as
-- JSON in the field on_<kind>_jobs. Their ids derive from the parent's and its attempt, so
-- a step that runs twice cannot create one twice.
-- `specs`: the field's value when the caller read it already (false: absent).
--#cold
local function spawn_followups(parent_id, parent_key, kind, outcome_field, outcome, specs)
  if specs == nil then specs = redis.call('HGET', parent_key, 'on_' .. kind .. '_jobs') end
  if not specs then return end
  -- Only a corrupt write makes the specs unreadable. Raising here would abort the step
  -- half-applied (Redis keeps a script's earlier writes), so the job's own outcome stands
  -- and the hash says why its follow-ups were not created.
  local ok, decoded = pcall(cjson.decode, specs)
  if not ok or type(decoded) ~= 'table' then
    redis.call('HSET', parent_key, 'followup_error', 'on_' .. kind .. '_jobs is not valid JSON')
    return
  end
  local attempts = redis.call('HGET', parent_key, 'attempts') or '0'
  for _, spec in ipairs(decoded) do
    if type(spec) ~= 'table' or type(spec.name) ~= 'string' or type(spec.fields) ~= 'table' then
      redis.call('HSET', parent_key, 'followup_error', 'on_' .. kind .. '_jobs holds a bad entry')
      return
    end
    local id = parent_id .. '.' .. spec.name .. '.' .. attempts
    local key = job_key(id)
    if redis.call('EXISTS', key) == 0 then
      local fields = {}
      for name, value in pairs(spec.fields) do
        fields[#fields + 1] = name
        fields[#fields + 1] = tostring(value)
      end
      redis.call('HSET', key, 'id', id, 'callback_of', parent_id, 'callback_kind', kind,
        outcome_field, outcome, 'created_at', NOW, 'attempts', 0, 'lost', 0, unpack(fields))
      push_queued(id, key, false)
      metric_count('enqueued', redis.call('HGET', key, 'queue'))
    end
  end
end
