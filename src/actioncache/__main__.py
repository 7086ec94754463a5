"""``python -m actioncache`` and the ``actioncache`` command.

An ``exec`` hit is answered before the CLI (and its argparse, json and the core) is imported:
``runs.hitpath`` returns None for anything that is not a plain hit, and the full CLI takes over.
"""

import sys


def main() -> int:
    if sys.argv[1:2] == ["exec"]:
        from .runs.hitpath import try_hit

        code = try_hit(sys.argv[2:])
        if code is not None:
            return code
    from .cli import main as cli_main

    return int(cli_main() or 0)


if __name__ == "__main__":
    raise SystemExit(main())
