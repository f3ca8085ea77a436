"""The Redis data model: key names, the numbers Lua and Python share, job statuses, the
replies of the steps, the Lua files and their build, and the one caller of the steps
(`steps/`). It imports only `rqconc.connection` and `rqconc.errors`: the client API
(`rqconc.queue`), the worker, the CLI and the dashboard sit above it."""
