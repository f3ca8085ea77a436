"""python main.py BACKEND SIZE [options]: the same as `rqconc worker -b BACKEND -n SIZE`."""
import sys

if __name__ == "__main__":
    # Before any other import: gevent must patch the standard library first.
    from rqconc.gevent_first import patch_if_gevent

    patch_if_gevent(sys.argv[1:2])

    from rqconc.cli import run_main_py

    run_main_py()
