--[[ enqueue_one: store one new job under a fresh random id, waiting now, depending on
nothing: what a producer sends in a loop (`queue.enqueue(f, ...)`).

The same writes as enqueue.lua makes for such a job (a test compares the hashes, queue
entries, events and counters both write), as a step of its own: enqueue.lua's general path
checks ids and parents, defers and schedules, and needs keys and arguments this job does not
(each costs a call ~1,150 Redis instructions), and every call of a script runs its whole text.
So this one declares its job's key and its mark, and names the rest from the namespace
prefix, as include/keys.lua does (tests/store/test_lua_steps.py holds the names to
rqconc/store/keys.py's). No include: it would define its functions on every call (EVALSHA;
store/functions.py keeps this step off the library for the same reason).

KEYS[1]          job:<id>            the job's hash
KEYS[2]          enqueued:<id>       optional: this request's mark, set for ENQUEUE_MARK_MS
                                     when the job may be deleted quickly (steps.py's `mark`)

ARGV[1]          queue name
ARGV[2]          now (ms since the epoch): created_at, enqueued_at, and the event's time
ARGV[3]          namespace prefix "{ns}:" (the queue's keys, seq, queues, events, metrics)
ARGV[4]          priority (0..100)
ARGV[5]          the job's id
ARGV[6...]       field/value pairs of its hash: the options' (common) fields, then its own

Idempotent, so that a request whose reply was lost can be sent again (queue.py does, once):
a job that exists under a fresh random id (128 bits) can only be this request's own. A job
kept 0 s (or briefly) may have run and been deleted before the resend gets here: the mark
remembers the request for ENQUEUE_MARK_MS. The mark is set if absent and tested in one call
(SET NX); a request that finds its job still there (a resend after the mark expired) may
leave the mark set: it is this request's own.

Returns 1: stored (or stored already, by this very request).
]]
-- Numbers of rqconc/store/defaults.py (the numbers test holds them equal) and of
-- include/jobs.lua's queue score: the middle of priority p's band is
-- (MAX_PRIORITY - p) * 2^46 + 2^45, and the counter adds at most 2^45 - 1 to it.
local MAX_PRIORITY = 100
local ENQUEUE_MARK_MS = 10000
local ENQUEUE_MARK_MS_TEXT = '10000'  -- as text (a number is formatted on each call)
local SCORE_BAND, SCORE_MIDDLE, SEQ_LIMIT = 70368744177664, 35184372088832, 35184372088831

local queue, now, ns, id = ARGV[1], ARGV[2], ARGV[3], ARGV[5]
if (KEYS[2] and not redis.call('SET', KEYS[2], '1', 'PX', ENQUEUE_MARK_MS_TEXT, 'NX'))
    or redis.call('EXISTS', KEYS[1]) == 1 then
  return 1  -- sent again: stored already
end

local func  -- for its event (every event names the job's function)
for j = 6, #ARGV, 2 do
  if ARGV[j] == 'func' then func = ARGV[j + 1] end
end
redis.call('SADD', ns .. 'queues', queue)
-- The pairs straight from ARGV: no table to build and grow for them.
redis.call('HSET', KEYS[1], 'queue', queue, 'created_at', now, 'status', 'queued',
  'enqueued_at', now, unpack(ARGV, 6))
local score = (MAX_PRIORITY - tonumber(ARGV[4])) * SCORE_BAND + SCORE_MIDDLE
  + math.min(redis.call('INCR', ns .. 'seq'), SEQ_LIMIT)
redis.call('ZADD', ns .. 'q:' .. queue, score, id)
redis.call('ZADD', ns .. 'marker:' .. queue, '0', '0')  -- wakes an idle worker
-- The basic `queued` entry of include/events.lua's emit (the fields test compares them).
redis.call('XADD', ns .. 'events', '*', 'event', 'queued', 'job_id', id, 'queue', queue,
  'ts', now, 'worker', '', 'attempt', '1', 'func', func or '')
-- SPEC 9's counter (include/metrics.lua's metric_count).
redis.call('HINCRBY', ns .. 'metrics', 'enqueued:' .. queue, '1')
return 1
