"""Core: frozen values the layers pass to each other: index files and candidates, targets, requirements,
verdicts, CUDA sonames, environment snapshots.

The core (``model``, the binary readers, ``analyze``, ``solve``, ``report``) never imports an edge
(``http``, the cache, ``index`` client, ``host``, ``probe``, ``commands``): edges read, the core is given
values. ``tests/test_import_contract.py`` enforces it.
"""
