"""Core: pure readers of wheel and binary structure, over names, bytes or a bounded stream.

Nothing here opens a file or a connection of its own, and nothing imports an edge (``http``, the cache,
``index``, ``host``, ``probe``, ``commands``); ``tests/test_import_contract.py`` enforces it.
"""
