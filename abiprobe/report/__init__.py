"""Core: documents rendered as JSON, Markdown and HTML (matrix, diff, ticket, restore plan).

The core (``model``, ``binary``, ``analyze``, ``solve``, ``report``) never imports an edge (``net``,
``store``, ``index``, ``installers``, ``host``, ``probe``, ``ui``, ``commands``, the CLI): it is given
values, not readers. ``tests/test_import_contract.py`` enforces it, with no exceptions.
"""
