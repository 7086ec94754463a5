"""Command memoization for agent loops: ``actioncache exec``.

``cli`` parses and runs one command through the cache, ``keys`` turns a command line into a
content-derived key, ``process`` runs a tool while capturing its output byte for byte, ``log``
keeps the run log and fail log in the store, and ``stats`` adds them up for ``stats --since``.
Nothing here is imported by ``import actioncache``.
"""
