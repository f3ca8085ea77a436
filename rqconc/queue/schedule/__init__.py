"""Jobs that run later: cron entries and intervals (`q.cron`, `q.every`; fired by the
worker's scheduler exactly once per tick) and the queue's collaborator that holds them
(`crontab.CronTab`)."""
