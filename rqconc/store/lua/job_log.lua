--[[ job_log: append lines to a job's log (`job.log()`, the `rqconc.job` logger) and keep
it within its bounds: the newest LOG_LINES lines, at most LOG_BYTES bytes in all.

Only a job that logs has a log, so a job that does not pays nothing. The log has no field
in the job's hash: its expiry follows the hash's, set by `seal_log` once the run's outcome
is recorded (the hash gets its TTL then; the child seals, or the supervisor for a run it
ended). Until then the log must outlive the job's run and, if no seal comes (a worker
killed whole and its lease recovered elsewhere, Redis away at the seal), last no longer
than the job can: the hash's own TTL when it has one, else the longer of its result_ttl
and failure_ttl (kept for ever when either keeps it for ever).

KEYS[1]          job:<id>            the job's hash
KEYS[2]          log:<id>            its log lines, oldest first

ARGV[1...]       the lines, oldest first (each at most LOG_BYTES bytes: the caller cuts)

Returns 1 when appended, 0 when there is no such job (a plain RPUSH would leave a log of
a deleted job behind).
]]
local LOG_LINES = 100
local LOG_BYTES = 65536
local DEFAULT_RESULT_TTL = 500
local DEFAULT_FAILURE_TTL = 31536000
local job, log = KEYS[1], KEYS[2]
if redis.call('EXISTS', job) == 0 then return 0 end
redis.call('RPUSH', log, unpack(ARGV))
redis.call('LTRIM', log, -LOG_LINES, -1)
-- At most LOG_LINES lines of at most LOG_BYTES each: the byte bound reads 6.4 MB at worst,
-- 64 KB once the bound holds (lines are kept whole; the oldest go first).
local lines = redis.call('LRANGE', log, 0, -1)
local total, kept = 0, 0
for i = #lines, 1, -1 do
  total = total + #lines[i]
  if total > LOG_BYTES then break end
  kept = kept + 1
end
if kept == 0 then
  redis.call('DEL', log)
  return 1
elseif kept < #lines then
  redis.call('LTRIM', log, -kept, -1)
end
local ttl = redis.call('PTTL', job)
if ttl > 0 then
  redis.call('PEXPIRE', log, ttl)
  return 1
end
local f = redis.call('HMGET', job, 'result_ttl', 'failure_ttl')
local result_ttl = tonumber(f[1]) or DEFAULT_RESULT_TTL
local failure_ttl = tonumber(f[2]) or DEFAULT_FAILURE_TTL
if result_ttl < 0 or failure_ttl <= 0 then
  redis.call('PERSIST', log)
else
  redis.call('EXPIRE', log, math.max(result_ttl, failure_ttl))
end
return 1
