--[[ purge_failed: delete dead letters and their data.

KEYS[1]          failed:<queue>      dead letters
KEYS[2i]         job:<id>            the i-th job's hash (i = 1..n)
KEYS[2i+1]       done:<id>           its completion list

ARGV[i]          the i-th job id

Only ids still in the dead letters are deleted (one requeued meanwhile is left alone).
Returns how many were deleted.
]]
local deleted = 0
for i = 1, #ARGV do
  if redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    redis.call('DEL', KEYS[2 * i], KEYS[2 * i + 1])
    deleted = deleted + 1
  end
end
return deleted
