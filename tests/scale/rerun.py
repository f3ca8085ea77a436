"""Run existing tests again on the scale-out deployments (tests/scale/conftest.py points
`redis_url`, `redis_server` and `client` at the deployment): one behaviour, one test, run on
every deployment, not copies of it."""

from importlib import import_module
from typing import Dict, List


def rerun_here(namespace: Dict[str, object], tests: Dict[str, List[str]]) -> None:
    """Put the named tests of each module into `namespace` (a test module's globals), as
    test_<module>__<name>: names repeat across modules."""
    for module, names in tests.items():
        short = module.rsplit(".", 1)[1].removeprefix("test_")
        for name in names:
            namespace[f"test_{short}__{name.removeprefix('test_')}"] = getattr(
                import_module(module), name
            )
