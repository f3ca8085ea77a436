--[[ enqueue: store a batch of new jobs of one queue, waiting now, scheduled, or deferred.

One call for a whole batch, so `enqueue_many` is one round trip and all-or-nothing. A job's
hash holds only the fields that differ from their defaults (rqconc/job.py lists them), plus
`queue` and `created_at` (ARGV[1] and ARGV[2]) and its state; the fields shared by the whole
batch (its options) are sent once and written into each hash.
A job with a `depends_on` field (JSON list of parent ids) waits `deferred` until every
parent has finished (see settle_dependents in include/dependents.lua); if a parent already
failed for good or was canceled, the job is canceled at once, unless its `allow_failure`
field is "1".

KEYS[1]          seq                 INCR counter: FIFO order within a priority
KEYS[2]          queues              set of known queue names
KEYS[3]          q:<queue>           waiting jobs, score = (100 - priority) * 2^46 + 2^45 + seq
                                     (the layout: queue_score in include/jobs.lua)
KEYS[4]          marker:<queue>      wake-up marker that idle workers BZPOPMIN
KEYS[5]          scheduled:<queue>   delayed jobs, score = due time (ms)
KEYS[6]          events              the event stream
KEYS[6+i]        job:<id>            the i-th job's hash (i = 1..n)
KEYS[7+n]        enqueued:<id>       optional: this request's mark (<id> the first job's),
                                     set for ENQUEUE_MARK_MS when the jobs may be deleted
                                     quickly (steps.py's `mark`)

ARGV[1]          queue name
ARGV[2]          now (ms since the epoch): created_at, enqueued_at, and event times
ARGV[3]          due time (ms), or "" to wait in the queue at once
ARGV[4]          n, the number of jobs
ARGV[5]          namespace prefix "{ns}:" (done:<id> and parents' keys are completed from it)
ARGV[6]          the jobs' priority (0..100)
ARGV[7]          "1" when the caller chose the ids: one that exists is refused, and its
                 done:<id> cleared; "" for fresh random ids, which need neither (one job
                 with a fresh id, waiting now, depending on nothing: enqueue_one.lua)
ARGV[8]          c, then c field/value pairs that every job's hash holds
ARGV[9+2c...]    per job: id, k, then k field/value pairs of its own

Idempotent per id, so that a request whose reply was lost can be sent again (queue.py does,
once): a job that exists under a fresh random id (128 bits) can only be this request's own,
and one under a caller's id is ours when its `enqueue_token` field (a random value the
caller sends among the common fields, once per call) is the one sent; such a job is left as
it is and counted as stored. A job kept 0 s (or briefly) may have run and been deleted
before the resend gets here: for those the request leaves a mark, enqueued:<first id>
holding its token ("1" for fresh ids), for ENQUEUE_MARK_MS; a resend that finds its own
mark stored everything already (the step is all-or-nothing) and writes nothing.

Returns {1, n} when every job was stored (or already was, by this very request),
        {0, id} when a job with that id already exists,
        {2, id} when a job depends on a parent id that does not exist
        (in both refusals nothing at all is written).
]]
--#context NS=ARGV[5] SEQ=KEYS[1] EVENTS=KEYS[6] NOW=ARGV[2] WORKER=''
local ENQUEUE_MARK_MS = 10000
local ENQUEUE_MARK_MS_TEXT = '10000'  -- as text (a number is formatted on each call)
local MARK = KEYS[7 + tonumber(ARGV[4])]  -- nil unless the caller asked for the mark

--#include keys
--#include metrics
--#include events
--#include jobs

local queue, due, n, chosen_ids = ARGV[1], ARGV[3], tonumber(ARGV[4]), ARGV[7] == '1'
local c = tonumber(ARGV[8])
local common_last = 8 + 2 * c

local function value_of(first, last, name)  -- a field among the pairs ARGV[first..last]
  for j = first, last, 2 do
    if ARGV[j] == name then return ARGV[j + 1] end
  end
  return nil
end

-- The common fields by name, read once: the passes below ask each job about some of them.
local common = {}
for j = 9, common_last, 2 do common[ARGV[j]] = ARGV[j + 1] end

-- A job's own field wins over a common one, as in its hash (written after them).
local function field_of(job, name)
  return value_of(job.first, job.last, name) or common[name]
end

-- This request's mark: its own token, or "1" when the ids are fresh (random: only ours).
local own_mark = '1'
if chosen_ids then own_mark = common['enqueue_token'] end
if MARK and own_mark and redis.call('GET', MARK) == own_mark then
  return {1, n}  -- sent again after a lost reply: every job was stored (and may have run)
end

-- Fresh ids are this request's own (128 random bits) and the step is all-or-nothing: when
-- the first one exists, this very request was stored already (sent again after a lost
-- reply). So one EXISTS serves a whole batch of fresh ids.
if not chosen_ids and redis.call('EXISTS', KEYS[7]) == 1 then
  return {1, n}
end

-- First pass: check every id and parent before writing anything (all-or-nothing).
local jobs, pos = {}, common_last + 1
for i = 1, n do
  local job = {id = ARGV[pos], key = KEYS[6 + i], first = pos + 2,
    last = pos + 1 + 2 * tonumber(ARGV[pos + 1])}
  if chosen_ids and redis.call('EXISTS', job.key) == 1 then
    local token = field_of(job, 'enqueue_token')
    -- A caller's id stored by this same call (sent again): already stored.
    job.stored = token ~= nil and redis.call('HGET', job.key, 'enqueue_token') == token
    if not job.stored then
      return {0, job.id}
    end
  end
  local parents = not job.stored and field_of(job, 'depends_on')
  if parents then
    job.parents = cjson.decode(parents)
    for _, parent in ipairs(job.parents) do
      if redis.call('EXISTS', job_key(parent)) == 0 then
        return {2, parent}
      end
    end
  end
  jobs[i] = job
  pos = job.last + 1
end

-- Wait for the parents still running; returns whether one of them already failed for good.
local function wait_for_parents(job, order)
  local pending, doomed = 0, nil
  local allow_failure = field_of(job, 'allow_failure') == '1'
  for _, parent in ipairs(job.parents) do
    local status = redis.call('HGET', job_key(parent), 'status')
    if status == 'failed' or status == 'canceled' then
      if not allow_failure then doomed = parent end
    elseif status ~= 'finished' then
      pending = pending + 1
      redis.call('ZADD', dependents_key(parent), order, job.id)
    end
  end
  return pending, doomed
end

-- The job's hash in one HSET: its queue, creation time and the state fields given, then
-- the common fields, then its own.
local function store(job, ...)
  local fields = {'queue', queue, 'created_at', NOW, ...}
  for j = 9, common_last do fields[#fields + 1] = ARGV[j] end
  for j = job.first, job.last do fields[#fields + 1] = ARGV[j] end
  redis.call('HSET', job.key, unpack(fields))
end

-- ZADD of many score/member pairs, in chunks that unpack() can take.
local function add_all(key, pairs)
  for j = 1, #pairs, 1000 do
    redis.call('ZADD', key, unpack(pairs, j, math.min(j + 999, #pairs)))
  end
end

redis.call('SADD', KEYS[2], queue)
-- One INCRBY numbers the whole batch in order; the score is queue_score's (include/jobs).
local first_seq = redis.call('INCRBY', SEQ, n) - n
local waiting, scheduled = {}, {}
-- event_detail is a queue's setting, sent among the common fields: the events below need
-- no HGET to learn it (detail_of in include/events). What the events know of a job whose
-- own fields name no function and no attempts: one table for all of them.
local detail = common['event_detail']
local common_known = {detail or false, common['func'] or '', common['attempts']}
-- The waiting jobs' scores: the middle of their priority's band (include/jobs), worked out
-- once, then each job's number in the batch placed in it (score_in).
local band = score_of(ARGV[6], 0, false)

-- What the events of `job` know of it: common_known, unless its own fields say otherwise.
local function known_of_job(job)
  local func, attempts, own = nil, nil, false
  for j = job.first, job.last, 2 do
    local name = ARGV[j]
    if name == 'func' then func, own = ARGV[j + 1], true
    elseif name == 'attempts' then attempts, own = ARGV[j + 1], true end
  end
  if not own then return common_known end
  return {detail or false, func or common_known[2], attempts or common_known[3]}
end

-- Store the i-th job as waiting, scheduled, deferred or canceled.
local function put(job, i)
  if chosen_ids then
    -- A reused id must not wake its waiters with an older outcome.
    redis.call('DEL', done_key(job.id))
  end
  local pending, doomed, known = 0, nil, known_of_job(job)
  if job.parents then
    pending, doomed = wait_for_parents(job, first_seq + i)
  end
  if doomed then
    store(job)
    know_detail_as(job.id, known)
    mark_canceled(job.id, job.key, 'job ' .. doomed .. ', which it depends on, did not finish')
  elseif pending > 0 then
    if due ~= '' then
      store(job, 'status', 'deferred', 'pending_deps', pending, 'due_at', due)
    else
      store(job, 'status', 'deferred', 'pending_deps', pending)
    end
    redis.call('ZADD', deferred_key(queue), NOW, job.id)
    emit_next('deferred', job.id, queue, known)
  elseif due == '' then
    store(job, 'status', 'queued', 'enqueued_at', NOW)
    waiting[#waiting + 1] = score_in(band, first_seq + i, false)
    waiting[#waiting + 1] = job.id
    emit_next('queued', job.id, queue, known)
  else
    store(job, 'status', 'scheduled')
    scheduled[#scheduled + 1] = due
    scheduled[#scheduled + 1] = job.id
    emit_next('scheduled', job.id, queue, known)
  end
end

local stored = 0
for i = 1, n do
  if not jobs[i].stored then  -- a job already stored is left as it is (it may have run)
    put(jobs[i], i)
    stored = stored + 1
  end
end
if stored > 0 then metric_count('enqueued', queue, stored) end
add_all(KEYS[3], waiting)
add_all(KEYS[5], scheduled)
if MARK and own_mark then
  redis.call('SET', MARK, own_mark, 'PX', ENQUEUE_MARK_MS_TEXT)
end
if #waiting > 0 then
  redis.call('ZADD', KEYS[4], '0', '0')
end
return {1, n}
