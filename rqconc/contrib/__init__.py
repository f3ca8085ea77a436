"""Integrations with other frameworks (SPEC 16). They use rqconc's public API only, and
nothing in rqconc imports them: each needs its framework installed (an extra)."""
