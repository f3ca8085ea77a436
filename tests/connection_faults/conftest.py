"""Faults of the wire between rqconc and Redis: lost replies, restarts, capped pools."""
