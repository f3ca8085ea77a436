"""`python -m rqconc ...`: the same as the `rqconc` console script, gevent-first like it."""

from rqconc.gevent_first import console_main

if __name__ == "__main__":
    console_main()
