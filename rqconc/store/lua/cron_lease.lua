--[[ cron_lease: take, renew or release the cron scheduler's leader lease (fenced by holder).

One supervisor leads at a time: it takes the lease when nobody holds it and renews it only
while it still holds it, so a leader that was paused past its TTL can never extend the lease
that another supervisor has taken meanwhile. A SIGKILLed leader stops renewing and loses the
lease when its TTL runs out; a supervisor that stops releases it (a TTL of 0), so `rqconc
cron list` never names a leader that has exited, and the next one takes over at its next
tick. A release deletes only this holder's lease: never the one another supervisor took
after this one's ran out.

KEYS[1]          scheduler:leader    the lease: "host:pid:worker name", with a TTL

ARGV[1]          holder (this supervisor's "host:pid:worker name")
ARGV[2]          lease TTL (ms), or "0" to release the lease

Returns {2, holder}  the lease was free and is now this holder's,
        {1, holder}  this holder led already and the lease was renewed,
        {3, holder}  released: this holder led and the lease is gone,
        {0, other}   another holder leads, or ("" with a release) nobody does; nothing written.
]]
local current = redis.call('GET', KEYS[1])
if ARGV[2] == '0' then
  if current == ARGV[1] then
    redis.call('DEL', KEYS[1])
    return {3, ARGV[1]}
  end
  return {0, current or ''}
end
if not current then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {2, ARGV[1]}
end
if current == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {1, ARGV[1]}
end
return {0, current}
