--[[ renew: extend the leases of running jobs, by claim.

The supervisor renews, not the job's own thread, so a job stuck in a C call keeps its lease
while its worker lives. A claim that no longer maps to a job (completed, failed, requeued,
or recovered after its lease expired) is ignored: that worker lost its lease for good.

KEYS[1]          active              leased jobs, score = lease deadline (ms)
KEYS[2]          claims              claim -> job id

ARGV[1]          lease length (ms): the new deadline is now + it, on Redis' clock
ARGV[2...]       claims

Returns the number of leases extended.
]]
--#include clock
local deadline = tonumber(NOW) + tonumber(ARGV[1])
local renewed = 0
for i = 2, #ARGV do
  local id = redis.call('HGET', KEYS[2], ARGV[i])
  if id and redis.call('ZSCORE', KEYS[1], id) then
    redis.call('ZADD', KEYS[1], 'XX', deadline, id)
    renewed = renewed + 1
  end
end
return renewed
