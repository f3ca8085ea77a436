--[[ enqueue_group: store a group of jobs of one queue, and its chord callback, in one step.

The members wait in the queue at once, each with `group_id` and `group_index` (1-based, its
place in the group); group:<id> records them (the fields: include/groups.lua, above
group_member_finished). A chord's callback is stored `deferred`, with `chord_of`, until the
step that finishes the last member enqueues it (complete.lua), or one that fails a member
for good cancels it (settle_dependents). Members have fresh random ids and no parents
(queue/groups.py refuses job_id and depends_on), so nothing here can be refused.

KEYS[1]          seq                 INCR counter: FIFO order within a priority
KEYS[2]          queues              set of known queue names
KEYS[3]          q:<queue>           waiting jobs (score: queue_score in include/jobs.lua)
KEYS[4]          marker:<queue>      wake-up marker that idle workers BZPOPMIN
KEYS[5]          events              the event stream
KEYS[6]          group:<id>          the group's record
KEYS[7]          deferred:<queue>    jobs waiting for others (the chord callback)
KEYS[7+i]        job:<id>            the i-th member's hash (i = 1..n)
KEYS[8+n]        job:<chord id>      with a chord: the callback's hash

ARGV[1]          queue name
ARGV[2]          now (ms since the epoch): enqueued_at and event times
ARGV[3]          n, the number of members (>= 1)
ARGV[4]          namespace prefix "{ns}:"
ARGV[5]          group id
ARGV[6]          seconds the group's record lives once the group ended (-1: forever)
ARGV[7]          the chord callback's id, or ""
ARGV[8...]       per member: id, priority, k, then k field/value pairs (queue and
                 created_at among them); then, with a chord: k, then k field/value pairs

Returns 1 when stored, 2 when the group exists already (the same request sent again after
its reply was lost: the group id is fresh and random, so nobody else's), nothing written.
]]
--#context NS=ARGV[4] SEQ=KEYS[1] EVENTS=KEYS[5] NOW=ARGV[2] WORKER=''
--#include metrics
--#include events
--#include jobs

if redis.call('EXISTS', KEYS[6]) == 1 then
  return 2
end
local queue, n, group_id, chord = ARGV[1], tonumber(ARGV[3]), ARGV[5], ARGV[7]
redis.call('SADD', KEYS[2], queue)
local first_seq = redis.call('INCRBY', SEQ, n) - n
local ids, pos = {}, 8
for i = 1, n do
  local id, priority, k = ARGV[pos], ARGV[pos + 1], tonumber(ARGV[pos + 2])
  local last = pos + 2 + 2 * k
  redis.call('HSET', KEYS[7 + i], 'status', 'queued', 'enqueued_at', NOW,
    'group_id', group_id, 'group_index', i, unpack(ARGV, pos + 3, last))
  redis.call('ZADD', KEYS[3], score_of(priority, first_seq + i, false), id)
  emit('queued', id, queue)
  ids[i] = id
  pos = last + 1
end

local record = {'queue', queue, 'created_at', NOW, 'total', n, 'pending', n,
  'state', 'running', 'ttl', ARGV[6], 'jobs', cjson.encode(ids)}
if chord ~= '' then
  local k = tonumber(ARGV[pos])
  redis.call('HSET', KEYS[8 + n], 'status', 'deferred', 'chord_of', group_id,
    unpack(ARGV, pos + 1, pos + 2 * k))
  redis.call('ZADD', KEYS[7], NOW, chord)
  emit('deferred', chord, queue)
  record[#record + 1], record[#record + 2] = 'chord_id', chord
end
redis.call('HSET', KEYS[6], unpack(record))
metric_count('enqueued', queue, chord ~= '' and n + 1 or n)
redis.call('ZADD', KEYS[4], 0, '0')
return 1
