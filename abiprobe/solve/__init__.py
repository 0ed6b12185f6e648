"""Core: candidates, the matrix, the resolver, the closure and the lock.

The core (``model``, ``binary``, ``analyze``, ``solve``, ``report``, ``render``) never imports an
edge (``net``, ``store``, ``index``, ``installers``, ``host``, ``probe``, ``commands``, the CLI): it is
given values, not readers. ``tests/test_import_contract.py`` enforces it; its allow-list names each
import that still breaks the rule.
"""
