"""Package indexes: simple-API pages (PEP 503 HTML, PEP 691 JSON), find-links pages, several indexes."""

from abiprobe.index.client import IndexClient, parse_page, project_url
from abiprobe.index.config import IndexConfig, IndexSource, load_index_config
from abiprobe.index.models import Candidate, IndexFile, ProjectPage, candidates_from_files
from abiprobe.index.multi import IndexOutcome, PageFetch, ProjectListing

__all__ = [
    "Candidate",
    "IndexClient",
    "IndexConfig",
    "IndexFile",
    "IndexOutcome",
    "IndexSource",
    "PageFetch",
    "ProjectListing",
    "ProjectPage",
    "candidates_from_files",
    "load_index_config",
    "parse_page",
    "project_url",
]
