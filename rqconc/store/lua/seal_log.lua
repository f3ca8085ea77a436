--[[ seal_log: once a run's outcome is recorded, the job's log expires with the job.

The worker runs it after a run that logged (a job that did not log has no log and no
seal), when the outcome step gave the hash its TTL: result_ttl for a finished job,
failure_ttl for a failed or canceled one, deleted at once for result_ttl=0.

KEYS[1]          job:<id>            the job's hash
KEYS[2]          log:<id>            its log lines

Returns 1 when the log now expires (or stays) with the job, 2 when the job is gone (its
log deleted), 0 when there is no log, or the job has not ended (a retry is due: the log
keeps the bound job_log gave it, and the next run's lines and seal come).
]]
local job, log = KEYS[1], KEYS[2]
if redis.call('EXISTS', log) == 0 then return 0 end
local ttl = redis.call('PTTL', job)
if ttl == -2 then
  redis.call('DEL', log)
  return 2
elseif ttl > 0 then
  redis.call('PEXPIRE', log, ttl)
  return 1
end
local status = redis.call('HGET', job, 'status')
if status == 'finished' or status == 'failed' or status == 'canceled' then
  redis.call('PERSIST', log)  -- kept for ever, as the job (result_ttl=-1, failure_ttl<=0)
  return 1
end
return 0
