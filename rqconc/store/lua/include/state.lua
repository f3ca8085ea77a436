--[[ state: STEP, the step-wide mutable state of the includes, in one table.

Every field is declared here, with the value each step starts with. Redis runs a script's
whole text on every call and keeps nothing between calls, so this one line is also the only
reset; a field changes only in the include named beside it. One table, sized once here (a
field added later would grow it, rehashing it each time).
]]
local STEP = {
  now_number = false,  -- NOW as a number, once converted (metrics: now_ms)
  metric_sums = false,  -- false: metrics written at once; a table: summed (metrics_summed)
  gathered = false,  -- false: registry writes sent at once; a table: noted (gather: gathering)
  known_detail = {},  -- job id -> {event_detail, func, attempts} (events: know_detail)
  held = nil,  -- nil: events written at once; false: hold the next; a table: held (events)
  promoted = false,  -- the due scheduled jobs were promoted (take: take_next)
  takes_free = false,  -- no revoked claim, no limits on the listened queues (take)
  limited = false,  -- the one take's claim is revoked or a queue has limits (take)
  no_dependents = false,  -- none of the jobs the step completes has dependents (complete)
}
