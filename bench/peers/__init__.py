"""One module per system: its tasks, how to enqueue them, and how to start its workers.

Every module has the same shape (see bench/driver.py, which uses them):
  noop(), sleep10(), stamp()   the tasks; noop and sleep10 INCR bench:done once, stamp
                               RPUSHes its start time (time.time()) to bench:starts
  enqueue(kind)                one job of that kind, one call of the system's enqueue API
  enqueue_batch(kind, n)       n jobs through the system's batch API (BATCH_API names it;
                               None: the system has none)
  fill(kind, n)                queue n jobs as fast as the system allows (before a run)
  workers(mode, python)        argv lists of the worker processes for a mode
"""
