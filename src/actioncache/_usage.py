"""Command-line parsers that help: a mistyped option or command is named, with the closest one.

argparse checks required options before it reports unknown ones, so ``invalidate --acton x`` said
"one of the arguments --key --pattern --action --metadata is required": true, and no help. Every
``actioncache`` command builds its parser from :class:`HelpfulParser`, which looks at what was
typed first: an option this command does not know (``--acton``), or a command that does not exist
(``actioncache stat``), is the error, with "did you mean" (exit 2, one line).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn, Sequence

__all__ = ["HelpfulParser", "closest"]


def closest(word: str, choices: Sequence[str]) -> str | None:
    """The choice ``word`` was most likely meant to be, or None when none is close."""
    import difflib

    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


class HelpfulParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors name the mistyped option or command and the closest one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)  # `--act` must not silently mean `--action`
        super().__init__(*args, **kwargs)
        self._typed: list[str] = []

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        self._typed = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {self.explain(self._typed) or message}\n"
                     f"(`{self.prog} --help` lists what it takes)\n")

    def explain(self, typed: Sequence[str]) -> str | None:
        """What was mistyped in ``typed``, if that is why parsing failed: the first unknown option
        or command (a known command's own parser judges the words after it)."""
        subparsers = self._subparsers_action()
        for index, token in enumerate(typed):
            if token == "--":
                return None
            if token.startswith("-") and len(token) > 1 and not _is_number(token):
                name = token.split("=", 1)[0]
                if name not in self._option_string_actions:
                    known = [o for o in self._option_string_actions if o.startswith("--")]
                    guess = closest(name, known)
                    return f"unknown option {name}" + (f"; did you mean {guess}?" if guess else "")
                continue
            if subparsers is not None:  # the first word is the command
                commands = list(subparsers.choices)
                if token not in commands:
                    guess = closest(token, commands)
                    return (f"unknown command {token!r}" + (f"; did you mean {guess!r}?" if guess else "")
                            + f" (commands: {', '.join(commands)})")
                command = subparsers.choices[token]
                return command.explain(typed[index + 1:]) if isinstance(command, HelpfulParser) else None
        return None

    def _subparsers_action(self) -> argparse._SubParsersAction[Any] | None:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return action
        return None


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True
