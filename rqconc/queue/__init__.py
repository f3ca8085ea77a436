"""The queue: the data model in Redis (`keys`, `lua/`, the one Lua caller `steps`) and the
client API on top of it (`Queue`, `Job`, cron entries, dead letters, flows, dependencies,
retry policies, serialization, the event stream, suspend/resume).

Everything a producer or an admin tool needs; nothing that runs jobs. It never imports
`rqconc.worker` or `rqconc.cli` (a test holds this)."""
