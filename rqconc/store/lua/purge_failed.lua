--[[ purge_failed: delete dead letters and their data.

KEYS[1]          failed:<queue>      dead letters
KEYS[2]          failed_expiry:<queue>  when each dead letter's failure_ttl runs out
KEYS[3i]         job:<id>            the i-th job's hash (i = 1..n)
KEYS[3i+1]       done:<id>           its completion list
KEYS[3i+2]       log:<id>            its log lines

ARGV[1], ...     the job ids: ARGV[i] is the i-th

Only ids still in the dead letters are deleted (one requeued meanwhile is left alone).
Returns how many were deleted.
]]
local deleted = 0
for i = 1, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('ZREM', KEYS[2], ARGV[i])
    redis.call('DEL', KEYS[3 * i], KEYS[3 * i + 1], KEYS[3 * i + 2])
    deleted = deleted + 1
  end
end
return deleted
