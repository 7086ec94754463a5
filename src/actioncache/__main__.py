"""``python -m actioncache`` and the ``actioncache`` command.

An ``exec`` hit is answered before the CLI (and its argparse, json and the core) is imported:
``runs.hitpath`` returns None for anything that is not a plain hit, and the full CLI takes over.
A ``run`` whose last identical run left a record is answered the same way (``agents.runhit``).
"""

import sys


def main() -> int:
    if sys.argv[1:2] == ["exec"]:
        import gc

        gc.disable()  # a hit allocates little and leaves by os._exit: no collection pays for itself
        from .runs.hitpath import try_hit

        code = try_hit(sys.argv[2:])
        gc.enable()
        if code is not None:
            return code
    if sys.argv[1:2] == ["run"]:
        from .agents.runhit import try_hit as try_run_hit

        code = try_run_hit(sys.argv[2:])
        if code is not None:
            return code
    if sys.flags.no_site and "site" not in sys.modules:  # started by bin/actioncache (python -S): the
        import site  # full command needs site-packages, .pth files and sitecustomize like any program

        site.main()
    from .cli import main as cli_main

    code = int(cli_main() or 0)
    if sys.argv[1:2] == ["exec"]:
        from .runs.cost import end_process

        return end_process(code)  # counts what the run costs after its record, and exits (os._exit)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
