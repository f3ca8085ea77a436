--[[ state: the step-wide mutable state of the includes, declared here and nowhere else.

Each name below starts every step with the value given here. Redis runs a script's whole
text on every call and keeps nothing between calls, so this declaration is also the only
reset; a name changes only in the include named beside it. In the Functions library
(build/library.py), where the text runs once per load, the `--#per-call` line makes each
declaration a local of the step's block and its value an assignment that every call of the
step's function makes first: the same reset.

Locals, not one table: the hot steps read these some 25 times per job, and a field of a
table costs a hash lookup each time where a local (an upvalue) costs none, besides the
table built per call. bench/step_cost.py --callgrind against 8e83c5a: with one table, the
eight-slot fused step 300.6 thousand instructions per job against 295.1 (base and head
each vary by about 2% between runs, so that alone did not decide it); with these locals,
every hot step at or below the base (bench/RESULTS.md).
]]
--#per-call (build/library.py: in the library each is reset at the start of each call)
local NOW_NUMBER = false  -- NOW as a number, once converted (metrics: now_ms)
local METRIC_SUMS = false  -- false: metrics written at once; a table: summed (metrics_summed)
local FUNC_LABELS = false  -- '<queue>,<func>' -> the label its runs count under (metrics)
local GATHERED = false  -- false: registry writes sent at once; a table: noted (gather)
local KNOWN_DETAIL = {}  -- job id -> {event_detail, func, attempts} (events: know_detail)
local HELD = nil  -- nil: events written at once; false: hold the next; a table: held (events)
local PROMOTED = false  -- the due scheduled jobs were promoted (take: take_next)
local TAKES_FREE = false  -- no revoked claim, no limits on the listened queues (take)
local LIMITED = false  -- the one take's claim is revoked or a queue has limits (take)
local NO_DEPENDENTS = false  -- none of the jobs the step completes has dependents (complete)
