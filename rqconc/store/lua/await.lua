--[[ await: read a job's outcome for job.get(), and mark the job as waited for if it has none.

The completion step pushes the outcome to done:<id> (which get() blocks on) only for jobs
marked here, so jobs nobody waits for cost no list and no expiry. Reading and marking in
one step leaves no gap for a completion to slip through unseen.

KEYS[1]          job:<id>            the job's hash
KEYS[2]          done:<id>           completion list

Returns {1, outcome} when done:<id> holds the outcome; {0} when the job does not exist;
{2, status, serializer, result, exc_type, exc_message, traceback} otherwise (absent fields
are nil), after marking the job (field waiters) when it has not ended yet.
]]
local pushed = redis.call('LINDEX', KEYS[2], 0)
if pushed then
  return {1, pushed}
end
local fields = redis.call('HMGET', KEYS[1], 'status', 'serializer', 'result', 'exc_type',
  'exc_message', 'traceback')
local status = fields[1]
if not status then
  if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
elseif status ~= 'finished' and status ~= 'failed' and status ~= 'canceled' then
  redis.call('HSET', KEYS[1], 'waiters', 1)
end
return {2, unpack(fields)}
