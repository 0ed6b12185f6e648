"""Core: static compatibility analysis: loader simulation over a wheel set, verdicts with explanations.

The core (``model``, ``binary``, ``analyze``, ``solve``, ``report``) never imports an edge (``net``,
``store``, ``index``, ``installers``, ``host``, ``probe``, ``ui``, ``commands``, the CLI): it is given
values, not readers. ``tests/test_import_contract.py`` enforces it, with no exceptions.

Import from the modules themselves (``abiprobe.analyze.analysis``, ``.loader``, ``.layout``, ...): this
package holds nothing of its own, so a command that needs only the loader does not import the whole analysis.
"""
