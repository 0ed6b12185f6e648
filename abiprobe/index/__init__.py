"""Edge: package indexes (PEP 503 HTML, PEP 691 JSON, find-links pages, several indexes) over HTTP.

What the pages say, as values, lives in the core (``abiprobe.model.candidate``); this package fetches.
Nothing is imported here, so importing one module of it does not load the client.
"""
