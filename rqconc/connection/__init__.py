"""Reaching Redis: URLs and their redaction, clients, the direct socket path of the hot
steps, the embedded server, and the errors a user sees when Redis cannot be reached.

Knows nothing of queues or jobs (a test holds this): `rqconc.queue` and `rqconc.worker`
build on it."""
