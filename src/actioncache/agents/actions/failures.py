"""The failure response of the built-in actions: ``success: false`` with ``error`` and a
machine-readable ``error_type`` (TEA's names):

* ``action_not_found``  cache.wrap / ratelimit.wrap named an action that is not registered
* ``action_error``      the wrapped action raised or returned ``success: false``
* ``validation_error``  a missing or bad parameter
* ``file_error``        a file could not be read
* ``cache_error``       the store failed
* ``ratelimit_timeout`` ratelimit.wrap found no free slot in time (or at once with ``on_limit: fail``)
"""

from __future__ import annotations

from typing import Any

ERROR_TYPES = ("action_not_found", "action_error", "validation_error", "file_error", "cache_error", "ratelimit_timeout")


def failure(error_type: str, error: str, **fields: Any) -> dict[str, Any]:
    return {"success": False, "error": error, "error_type": error_type, **fields}


def typed(response: dict[str, Any], error_type: str) -> dict[str, Any]:
    """``response`` with ``error_type`` set when it is a failure that has none yet."""
    if response.get("success") is False and "error_type" not in response:
        response["error_type"] = error_type
    return response


def bad_count(value: Any, what: str) -> str | None:
    """Why ``value`` is not a count (a whole number >= 0) for parameter ``what``; None when it is one."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return f"{what} must be a whole number >= 0, not {value!r}"
    return None
