--[[ cron_lease: take or renew the cron scheduler's leader lease (fenced by holder).

One supervisor leads at a time: it takes the lease when nobody holds it and renews it only
while it still holds it, so a leader that was paused past its TTL can never extend the lease
that another supervisor has taken meanwhile. A SIGKILLed leader stops renewing and loses the
lease when its TTL runs out.

KEYS[1]          scheduler:leader    the lease: "host:pid:worker name", with a TTL

ARGV[1]          holder (this supervisor's "host:pid:worker name")
ARGV[2]          lease TTL (ms)

Returns {2, holder}  the lease was free and is now this holder's,
        {1, holder}  this holder led already and the lease was renewed,
        {0, other}   another holder leads (nothing written).
]]
local current = redis.call('GET', KEYS[1])
if not current then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {2, ARGV[1]}
end
if current == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, ARGV[1]}
end
return {0, current}
