"""A queue's limits (SPEC 11): concurrency and rate caps, group caps, pause (`settings`),
the enqueue options `group`, `ttl`, `unique_key`, `unique_for`, `debounce` (`options`),
and the jobs parked behind a group's cap (`parked`). The take step enforces them in Redis."""
