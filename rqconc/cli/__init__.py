"""The `rqconc` command line: the click app (`app`), the worker command (`worker`) and
one module per command group. Commands talk to Redis only through `rqconc.queue` and
`rqconc.worker` APIs, never through raw keys."""
