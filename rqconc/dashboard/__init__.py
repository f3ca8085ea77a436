"""The web dashboard (`rqconc dashboard`, SPEC section 9): an ASGI app whose HTML, CSS and
JavaScript ship in `static/`. The server answers JSON; the page renders it with DOM text
nodes only, so job arguments and tracebacks (attacker-controlled text) never become markup.

settings   what the command line decides (host safety, credentials), no web imports
reads      the O(page) Redis reads behind each page
job_view   one job's page: call, outcome, flow, dead letter, events
security   HTTP Basic auth, the CSRF token, the browser's safety headers
api        the JSON endpoints (GET reads, POST actions)
app        the Starlette app: page routes, static files, /metrics
"""
