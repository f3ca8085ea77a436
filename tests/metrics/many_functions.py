"""101 job functions, f000 ... f100, made at import: one more than a queue's metrics name
(tests/metrics/test_functions.py)."""


def _made(number):
    def function():
        return number

    function.__name__ = function.__qualname__ = f"f{number:03d}"
    return function


for _number in range(101):
    globals()[f"f{_number:03d}"] = _made(_number)

NAMES = [f"tests.metrics.many_functions:f{number:03d}" for number in range(101)]
