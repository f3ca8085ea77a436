"""`python -m bench.cluster_worker URL NAMESPACE`: a `forking 2` worker on queue "bench" of
one namespace (the worker command line gets --namespace from another branch of work; the
Supervisor takes it already)."""

import sys

from rqconc import Supervisor
from rqconc.worker import logs


def main() -> None:
    url, namespace = sys.argv[1:3]
    logs.configure("WARNING")  # as the other benchmark workers (--log-level WARNING)
    supervisor = Supervisor(
        "forking", 2, ["bench"], connection=url, namespace=namespace, allow=["bench"]
    )
    sys.exit(supervisor.run())


if __name__ == "__main__":
    main()
