"""Metrics kept in Redis by the Lua steps: reading them (read) and the Prometheus text
format (exposition)."""
