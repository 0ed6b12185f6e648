"""Edge: HTTP (timeouts, retries, credentials, TLS and proxy settings), ``file://`` URLs, range reads of
remote wheels.

The core never imports this package (``tests/test_import_contract.py`` enforces it).
"""
