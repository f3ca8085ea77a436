"""python main.py BACKEND SIZE [options]: the same as `rqconc worker -b BACKEND -n SIZE`."""

import sys

if __name__ == "__main__":
    # Before any other import: as PID 1 an in-process worker runs below a reaping init, and
    # gevent must patch the standard library first.
    from rqconc.gevent_first import prepare_worker_process

    prepare_worker_process(sys.argv[1:], positional=True)

    from rqconc.cli.worker_command import run_main_py

    run_main_py()
