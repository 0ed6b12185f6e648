"""Edge: this host (installed environments, ``ldconfig``, environment snapshots); a local wheel file's facts
are read by ``abiprobe.binary.wheel``.

The core (model, binary readers, analyze, solve, report) never imports this package; it is given the
values read here (``tests/test_import_contract.py`` enforces it).
"""
