"""Edge: package indexes (PEP 503 HTML, PEP 691 JSON, find-links pages, several indexes) over HTTP,
and the choice of one item's wheel from a listing (``remote_items``).

What the pages say, as values, lives in the core (``abiprobe.model.candidate``); this package fetches.
Nothing is imported here, so importing one module of it does not load the client.
"""
