"""Edge: ``wheel_index_cache/`` (pages, content-addressed facts, metadata) and this machine's own state.

``store.reads`` holds the one cache-first read of wheels' facts, summaries and METADATA that every path
uses. The core never imports this package (``tests/test_import_contract.py`` enforces it); it is given
what was read here.
"""
