"""The one caller of the Lua steps: `core.Steps` (a job's lifecycle, registries),
`producer` (the producer's steps, built for both transports), `batch` (several jobs in one
step), `maintenance` (lease recovery, the trim of expired entries), `cron` (entries, the
leader lease, ticks), `limits` (queue limits and pause), `metrics` and `reporting` (meta,
progress). Nothing else in rqconc runs a script."""

# The steps a worker's child runs for its jobs (take, the fused complete-and-take, their
# batched forms, fail): its supervisor builds them before forking (scripts.prepare).
JOB_STEPS = ("take", "complete", "take_many", "complete_many", "fail")
