"""The one caller of the Lua steps: `core.Steps` (a job's lifecycle, registries, cron),
`batch` (several jobs in one step), `limits` (queue limits and pause), `metrics` and
`reporting` (meta, progress). Nothing else in rqconc runs a script."""
