"""python main.py BACKEND SIZE [options]: the same as `rqconc worker -b BACKEND -n SIZE`."""
import sys

if __name__ == "__main__":
    # Before any other import: as PID 1 an in-process worker runs below a reaping init, and
    # gevent must patch the standard library first.
    from rqconc.gevent_first import patch_if_gevent
    from rqconc.pid1 import backend_named, split_if_pid1

    split_if_pid1(backend_named(sys.argv[1:], positional=True))
    patch_if_gevent(sys.argv[1:2])

    from rqconc.cli import run_main_py

    run_main_py()
