"""Edge: this host (installed environments, local wheel files, ``ldconfig``, environment snapshots).

The core (model, binary readers, analyze, solve, report) never imports this package; it is given the
values read here (``tests/test_import_contract.py`` enforces it).
"""
