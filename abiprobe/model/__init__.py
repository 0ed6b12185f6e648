"""Core: frozen values the layers pass to each other: index files and candidates, targets, requirements,
verdicts, CUDA sonames, environment snapshots.

The core (``model``, ``binary``, ``analyze``, ``solve``, ``report``) never imports an edge (``net``,
``store``, ``index``, ``installers``, ``host``, ``probe``, ``ui``, ``commands``, the CLI): it is given
values, not readers. ``tests/test_import_contract.py`` enforces it, with no exceptions.
"""
