--[[ progress: store a running job's progress and append a `progress` event.

Only a job that runs (status `started`) takes progress: a run whose job was canceled,
timed out or finished meanwhile must not overwrite what its end recorded. The event carries
`func` and `attempt` (the current execution: stored attempts + 1) as every event does.

KEYS[1]          job:<id>            the job's hash
KEYS[2]          events              the event stream

ARGV[1]          job id
ARGV[2]          fraction, 0.0 to 1.0, as text
ARGV[3]          message, or "" with ARGV[4] = "0" (no message)
ARGV[4]          "1" when ARGV[3] is a message

Returns 1 when stored, 0 when the job does not run, -1 when there is no such job.
]]
--#include clock
local key = KEYS[1]
local status, queue, worker, func, attempts = unpack(
  redis.call('HMGET', key, 'status', 'queue', 'worker', 'func', 'attempts'))
if not status then return -1 end
if status ~= 'started' then return 0 end
local fields = {'event', 'progress', 'job_id', ARGV[1], 'queue', queue or '', 'ts', NOW,
  'worker', worker or '', 'attempt', (tonumber(attempts) or 0) + 1, 'func', func or '',
  'progress', ARGV[2]}
if ARGV[4] == '1' then
  redis.call('HSET', key, 'progress', ARGV[2], 'progress_message', ARGV[3])
  fields[#fields + 1] = 'message'
  fields[#fields + 1] = ARGV[3]
else
  redis.call('HSET', key, 'progress', ARGV[2])
  redis.call('HDEL', key, 'progress_message')
end
redis.call('XADD', KEYS[2], '*', unpack(fields))  -- trimmed by maintenance (trim_events)
return 1
