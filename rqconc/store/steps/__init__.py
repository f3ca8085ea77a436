"""The one caller of the Lua steps: `core.Steps` (a job's lifecycle, registries),
`batch` (several jobs in one step), `maintenance` (lease recovery, the trim of expired
entries), `cron` (entries, the leader lease, ticks), `limits` (queue limits and pause),
`metrics` and `reporting` (meta, progress). Nothing else in rqconc runs a script."""
