"""What plugs the queue into the engine: the Redis work source (`RedisSource`: taking and
performing in the children; leases, presence, cancels and ended children's jobs in the
supervisor), the job runner, the worker registry, the cron scheduler, webhook delivery,
logging set-up, and the public `Supervisor` (docs/architecture.md, "The worker")."""
