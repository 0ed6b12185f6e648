"""Core: every renderer. Documents and values become JSON, Markdown, HTML (matrix, diff, ticket, restore
plan) or rich renderables for the terminal (``*_text.py``, one per command that prints text: each returns
the parts of ``lines.py`` for ``abiprobe.ui.console.print_all``, or, inspect and diff, prints on the console
it is given); ``commands/`` only prints them.

The core (``model``, ``binary``, ``analyze``, ``solve``, ``report``) never imports an edge (``net``,
``store``, ``index``, ``installers``, ``host``, ``probe``, ``ui``, ``commands``, the CLI): it is given
values, not readers. ``tests/test_import_contract.py`` enforces it, with no exceptions.
"""
