--[[ save_meta: store a job's `meta` (JSON), only while the job exists.

A plain HSET would recreate a deleted (or expired) job as a hash holding `meta` alone.
An empty dict is the default and is not stored (the field is removed).

KEYS[1]          job:<id>            the job's hash

ARGV[1]          meta as JSON text ("{}": remove the field)

Returns 1 when stored, 0 when there is no such job.
]]
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[1] == '{}' then
  redis.call('HDEL', KEYS[1], 'meta')
else
  redis.call('HSET', KEYS[1], 'meta', ARGV[1])
end
return 1
