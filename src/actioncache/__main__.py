"""``python -m actioncache`` and the ``actioncache`` command.

An ``exec`` hit is answered before the CLI (and its argparse, json and the core) is imported:
``runs.hitpath`` returns None for anything that is not a plain hit, and the full CLI takes over.
A ``run`` whose last identical run left a record is answered the same way (``agents.runhit``).
"""

import sys


def main() -> int:
    if sys.argv[1:2] == ["exec"]:
        from .runs.hitpath import try_hit

        code = try_hit(sys.argv[2:])
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

    return int(cli_main() or 0)


if __name__ == "__main__":
    raise SystemExit(main())
