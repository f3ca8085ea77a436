--[[ metrics (included by the steps that change a job's state; SPEC 9).

The including script defines NS (the namespace prefix "{ns}:") and NOW (ms, a string;
`--#include clock`, or the producer's clock in the enqueue steps).

Counters and histograms live in the same atomic step as the change they count, so one read
gives numbers exact across every worker and host (rqconc/metrics/read.py reads them). All
of a namespace's totals are one hash, {ns}:metrics, fields named metric first, queue last
(a queue name may hold ':', a metric name and a bucket bound never do):
  enqueued:<queue> failed:<queue> retried:<queue>   counters
  run:<le>:<queue>  wait:<le>:<queue>   histogram buckets, NOT cumulative: the runs whose
                    time (ms) is at most <le> and above the previous bound ('inf': the rest)
  run_ms:<queue>  wait_ms:<queue>       the sums of the observed times (ms)
  run_failed:<queue>                    the runs of the run histogram that failed
The run histogram, its sum, run_failed and failed are kept per function: the same names
with ',<func>' after the queue (a queue name never holds ','; a function's may), e.g.
run:5:<queue>,<func>; a reader adds a queue's functions up for the queue (fields without a
function are from before and count for the queue alone). At most MAX_FUNCTIONS functions
per queue are named, in the set {ns}:funcs:<queue>; the runs of any other count under the
function 'other'. The check costs the hot path no call: HINCRBY answers a field's new
total, and only a field's first write (total = the increment) asks the set (func_label);
a function refused then has that field deleted again, so a refused function pays the
check on each of its runs (four calls more), and the hash keeps at most MAX_FUNCTIONS + 1
functions per queue whatever is enqueued.
Run time is start to end of every run that ended, finished or failed (as wait time, entering
the queue to start, is observed at every start). The finished counter is the run histogram's
count less run_failed: a finishing job, the hot path, pays no counter of its own; a failed
run pays that one HINCRBY more. Every job pays these in take and complete (or fail): two
HINCRBYs for the buckets, and one for each sum whose time is 1 ms or more (each call about
12,000 Redis instructions with the call around it; bench/step_cost.py --callgrind).
The last hour, per minute, costs jobs nothing: metrics_mark.lua keeps the run buckets, failed
runs and failures of {ns}:metrics as they stood when each minute began, in {ns}:metrics:<minute>
(Unix seconds, a multiple of 60; an hour's life), and rqconc/metrics/read.py's timeline()
subtracts one minute's copy from the next. Every worker's supervisor asks for the copy when
it starts and at every tick (once per second; only the first ask of a minute copies).
]]
--#needs NS NOW
--#include state

local MAX_FUNCTIONS = 100  -- functions named per queue; the rest count as 'other'

local function metrics_key() return NS .. 'metrics' end
local function metrics_minute_key(minute) return NS .. 'metrics:' .. minute end
--#cold
local function functions_key(queue) return NS .. 'funcs:' .. queue end

-- The label function `func` of `queue` is counted under: itself while the queue names at most
-- MAX_FUNCTIONS functions, else 'other'. Asked only on a field's first write, and answered
-- once per step (FUNC_LABELS); the set only grows, so a function once named stays named.
--#cold
local function func_label(queue, func)
  local labels = FUNC_LABELS or {}
  FUNC_LABELS = labels
  local seen = labels[queue .. ',' .. func]
  if seen then return seen end
  local set, label = functions_key(queue), 'other'
  if func == 'other' or redis.call('SISMEMBER', set, func) == 1 then
    label = func
  elseif redis.call('SCARD', set) < MAX_FUNCTIONS then
    redis.call('SADD', set, func)
    label = func
  end
  labels[queue .. ',' .. func] = label
  return label
end

-- HINCRBY of the field `name`:<queue>,<func> by n (a number, or the text '1': a number is
-- written as text by Redis' Lua at the cost of a sprintf); on the field's first write (its
-- total is n) the function's label is asked, and a refused function's count moves to
-- 'other'.
local function func_count(name, queue, func, n)
  local key, field = metrics_key(), name .. ':' .. queue .. ',' .. func
  if redis.call('HINCRBY', key, field, n) ~= (n == '1' and 1 or n) then return end
  local label = func_label(queue, func)
  if label ~= func then
    redis.call('HDEL', key, field)
    redis.call('HINCRBY', key, name .. ':' .. queue .. ',' .. label, n)
  end
end

-- The histogram bucket of a time (ms): the first bound at or above it, as text (a field
-- name), 'inf' above the last. Bounds (ms), the same as rqconc/metrics/read.py's (a test
-- compares them): 1 5 10 25 50 100 250 500 1000 2500 5000 10000 30000 60000 300000.
-- Comparisons, not a table of the bounds: a table would be built on every call of the step
-- (about 6,000 instructions for the bounds and their texts; issue 21).
local function metric_bucket(ms)
  if ms <= 100 then
    if ms <= 1 then return '1' elseif ms <= 5 then return '5' elseif ms <= 10 then return '10'
    elseif ms <= 25 then return '25' elseif ms <= 50 then return '50' end
    return '100'
  end
  if ms <= 250 then return '250' elseif ms <= 500 then return '500'
  elseif ms <= 1000 then return '1000' elseif ms <= 2500 then return '2500'
  elseif ms <= 5000 then return '5000' elseif ms <= 10000 then return '10000'
  elseif ms <= 30000 then return '30000' elseif ms <= 60000 then return '60000'
  elseif ms <= 300000 then return '300000' end
  return 'inf'
end

-- NOW as a number, converted once per step: a tonumber of a string is a strtod in Redis'
-- Lua (about 1,500 instructions), and a step of many jobs asked for it several times a job.
local function now_ms()
  local now = NOW_NUMBER
  if not now then
    now = tonumber(NOW)
    NOW_NUMBER = now
  end
  return now
end

-- Elapsed ms since `since` (a stored ms time; a corrupt or future one counts as 0).
local function metric_elapsed(since)
  local now = now_ms()
  local elapsed = now - (tonumber(since) or now)
  if elapsed ~= elapsed or elapsed < 0 then return 0 end
  return elapsed
end

local function metric_count(name, queue, n)
  redis.call('HINCRBY', metrics_key(), name .. ':' .. (queue or 'default'), n or '1')
end

-- A step that starts and ends many runs (complete_many) sums their observations here and
-- writes each field once at its end (metrics_flush): the same totals, with one HINCRBY per
-- field instead of one per job. METRIC_SUMS false: every observation is
-- written at once. A function's field sums into {name, queue, func, total} (a table made
-- once per field and step), so the flush can move a refused function to 'other'.
local function metrics_summed() METRIC_SUMS = {} end

-- Write what metrics_summed collected (in the same step: a reader never sees a half).
local function metrics_flush()
  local key = metrics_key()
  for field, n in pairs(METRIC_SUMS or {}) do
    if type(n) == 'table' then  -- a function's: {name, queue, func, total}
      func_count(n[1], n[2], n[3], n[4])
    else
      redis.call('HINCRBY', key, field, n)
    end
  end
  METRIC_SUMS = false
end

-- One observation of a wait: its bucket counted, and its time added to the sum (a time
-- under a millisecond adds nothing: no call, and many jobs are that short). Written at once,
-- or summed when the step asked for that (metrics_summed).
local function metric_observed(name, ms, queue)
  local q = queue or 'default'
  local bucket, sum = name .. ':' .. metric_bucket(ms) .. ':' .. q, name .. '_ms:' .. q
  local sums = METRIC_SUMS
  if sums then
    sums[bucket] = (sums[bucket] or 0) + 1
    if ms > 0 then sums[sum] = (sums[sum] or 0) + ms end
    return
  end
  local key = metrics_key()
  redis.call('HINCRBY', key, bucket, '1')
  if ms > 0 then redis.call('HINCRBY', key, sum, ms) end
end

-- A run started (take): the wait since the job entered its queue.
local function metric_started(queue, enqueued_at)
  metric_observed('wait', metric_elapsed(enqueued_at), queue)
end

-- A run of `func` that ended after `ms` (metric_elapsed since its start): its bucket and
-- time, as metric_observed's, per function. A run that finished (complete) is counted as
-- finished by this alone. Each new local function costs every call of the steps that include
-- it (a closure, its upvalues looked up): so this one does the summed case too.
local function metric_run_ended(queue, func, ms)
  local q, f = queue or 'default', func or 'other'
  local bucket = 'run:' .. metric_bucket(ms)
  local sums = METRIC_SUMS
  if not sums then
    func_count(bucket, q, f, '1')
    if ms > 0 then func_count('run_ms', q, f, ms) end
    return
  end
  local field = bucket .. ':' .. q .. ',' .. f
  local summed = sums[field] or {bucket, q, f, 0}
  summed[4] = summed[4] + 1
  sums[field] = summed
  if ms > 0 then
    field = 'run_ms:' .. q .. ',' .. f
    summed = sums[field] or {'run_ms', q, f, 0}
    summed[4] = summed[4] + ms
    sums[field] = summed
  end
end

-- A run of `func` ended in failure (fail.lua: retried, failed for good or canceled) after
-- `ms`: its run time observed, and counted as failed so the finished count leaves it out.
--#cold
local function metric_run_failed(queue, func, ms)
  metric_run_ended(queue, func, ms)
  func_count('run_failed', queue or 'default', func or 'other', '1')
end

-- A job of `func` failed for good (a dead letter, a poison pill).
--#cold
local function metric_failed(queue, func)
  func_count('failed', queue or 'default', func or 'other', '1')
end
