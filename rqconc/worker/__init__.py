"""What plugs the queue into the engine: the Redis work source (taking and performing,
recording outcomes, the supervisor's duties), the job runner, the worker registry, the
cron scheduler, webhook delivery, logging set-up, and the public `Supervisor`."""
