"""Reports."""

from app.greet import greet


def report(names: list[str]) -> str:
    return "\n".join(greet(n) for n in names)
