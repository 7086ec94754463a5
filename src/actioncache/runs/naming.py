"""Which ``non_cacheable_tools`` entry a command line matches, the way agent-loop configs spell tools.

A config names a tool and, often, one of its subcommands with an underscore: ``git_push`` means
``git push``, ``kubectl_apply`` means ``kubectl apply``. A command matches an entry when the entry
(a name or a glob) matches

* the program as written or its file name (``git``, ``/usr/bin/git``), or
* the program's file name joined with **any** later argument that is not an option, by ``_``,
  ``-`` or a space (``git_push``, ``git-push``, ``git push`` for ``git -C repo push origin``).

Any argument, not only the first: options with values (``git -C repo push``) would otherwise hide
the subcommand, and a wrongly matched command merely runs fresh while a missed one would be
replayed. Plain names are matched here without ``fnmatch`` (the hit path uses this); globs are left
to the caller's matcher.
"""

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs a hit ~10 ms
if TYPE_CHECKING:
    import os
    from typing import Callable, Iterable, Sequence
else:  # os without importing it (``_os``: ~6 M instructions a hit)
    from .._os import os

GLOB_CHARS = frozenset("*?[]\\")
JOINERS = ("_", "-", " ")


def spellings(command: "Sequence[str]") -> list[tuple[str, str]]:
    """Every name ``command`` answers to in ``non_cacheable_tools``, each with how to show it."""
    program = command[0]
    tool = os.path.basename(program) or program
    names = [(program, tool), (tool, tool)]
    for arg in command[1:]:
        if arg and not arg.startswith("-"):
            names += [(f"{tool}{joiner}{arg}", f"{tool} {arg}") for joiner in JOINERS]
    return names


def match(patterns: "Iterable[str]", command: "Sequence[str]",
          glob: "Callable[[str, str], bool] | None" = None) -> tuple[str, str] | None:
    """The first entry of ``patterns`` that ``command`` matches, with what it matched (``git push``),
    else None. Without ``glob`` a pattern with glob characters raises ValueError (the hit path then
    leaves the run to the full command, which passes ``_glob.glob_matches``)."""
    names = spellings(command)
    for pattern in patterns:
        if GLOB_CHARS & set(pattern):
            if glob is None:
                raise ValueError(pattern)
            found = next((shown for name, shown in names if glob(pattern, name)), None)
        else:
            found = next((shown for name, shown in names if name == pattern), None)
        if found is not None:
            return pattern, found
    return None


def executed_names(execs: "Iterable[Sequence[str]]") -> list[tuple[str, str]]:
    """The names every program a traced run executed answers to (``spellings`` of each execve,
    its path first), and each non-option argument as a program too, with and without its extension
    (``bash deploy_script.sh`` ran ``deploy_script``: an interpreter's script is what it runs)."""
    names: list[tuple[str, str]] = []
    for argv in execs:
        names += spellings(argv)
        words = [argv[0], *(a for a in argv[1:] if a and not a.startswith("-"))]
        for word in words:
            base = os.path.basename(word.rstrip("/")) or word
            stem = base.rsplit(".", 1)[0] if "." in base.strip(".") else base
            names += [(base, base), (stem, base)]
    return names


def match_executed(patterns: "Iterable[str]", execs: "Iterable[Sequence[str]]",
                   glob: "Callable[[str, str], bool]") -> tuple[str, str] | None:
    """The first entry of ``patterns`` any executed program matches (``executed_names``), else None."""
    names = executed_names(execs)
    for pattern in patterns:
        if GLOB_CHARS & set(pattern):
            found = next((shown for name, shown in names if glob(pattern, name)), None)
        else:
            found = next((shown for name, shown in names if name == pattern), None)
        if found is not None:
            return pattern, found
    return None
