"""Every argument that names a wheel, as the wheel the *target* would get: one typed ``Item`` per argument.

A local ``.whl``, a directory (an unpacked wheel or a tree of binaries), a wheel URL, or
``PROJECT==VERSION``, which is looked up on the configured indexes with the target's tags (never this
host's). ``check`` and ``probe`` take the same items; what pip would install beside them is
``abiprobe.solve.install``'s job. A wheel whose bytes cannot be read is still an item: its ``unread``
says why, so every check needing its bytes is ``unknown`` rather than the command giving up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from packaging.requirements import Requirement

from abiprobe.errors import AbiprobeError, UsageError
from abiprobe.facts import WheelFacts
from abiprobe.index.client import IndexClient
from abiprobe.index.config import load_index_config
from abiprobe.model.candidate import IndexFile
from abiprobe.model.target import Target
from abiprobe.net.http import Http
from abiprobe.remote_inspect import facts_of_file, index_file_from_url, pick_candidate
from abiprobe.store.cache import Cache


@dataclass(frozen=True)
class Item:
    """One argument as a wheel: its facts (None with ``unread`` when its bytes could not be read), where
    it comes from (``file``), and the local file when there is one."""

    text: str
    file: IndexFile
    facts: WheelFacts | None
    local: Path | None = None
    unread: str | None = None

    @property
    def label(self) -> str:
        if self.facts is not None:
            return f"{self.facts.metadata.name} {self.facts.metadata.version}"
        return self.file.filename


class ItemSource:
    """The I/O remote items and install closures need, made on first use and shared by the whole command:
    one HTTP client, the wheel cache, and an index client over ``--index-url`` (else the user's
    installer configuration)."""

    def __init__(self, cache_dir: Path | None, index_urls: list[str] | None, offline: bool, progress: bool):
        self.cache = Cache(cache_dir)
        self.index_urls, self.offline, self.progress = index_urls or [], offline, progress
        self._http: Http | None = None
        self._client: IndexClient | None = None

    @property
    def http(self) -> Http:
        if self._http is None:
            self._http = Http(progress=self.progress)
        return self._http

    @property
    def client(self) -> IndexClient:
        if self._client is None:
            config = load_index_config(cli_indexes=self.index_urls)
            self._client = IndexClient(
                config.sources,
                self.cache,
                self.http,
                self.offline,
                strategy=config.strategy,
                pins=config.pins,
            )
        return self._client

    def __enter__(self) -> ItemSource:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._http is not None:
            self._http.close()

    def remote_facts(self, file: IndexFile) -> WheelFacts:
        """Facts of a remote wheel: the cache first; offline, only a whole cached entry will do."""
        return facts_of_file(file, self.http, self.cache, offline=self.offline)


def remote_file(text: str, source: ItemSource, target: Target) -> IndexFile:
    """The index file a wheel URL or ``PROJECT==VERSION`` names, for the target."""
    if text.startswith(("http://", "https://")):
        return index_file_from_url(text)
    name = Requirement(text).name if "==" in text else text
    listing = source.client.list_project(name)
    return pick_candidate(listing.candidates, text, target=target, unread=listing.failed).file


def resolve_item(text: str, source: ItemSource, target: Target, *, tolerate_unread: bool = True) -> Item:
    """``text`` as an Item for ``target``; a remote wheel that cannot be read is kept, marked unread
    (unless ``tolerate_unread`` is off, then its error is raised)."""
    path = Path(text)
    if path.is_file() and path.suffix == ".whl":
        from abiprobe.wheel import wheel_facts_from_path

        facts = wheel_facts_from_path(path)
        file = IndexFile(
            path.name, path.absolute().as_uri(), {"sha256": facts.sha256} if facts.sha256 else {}
        )
        return Item(text, file, facts, local=path)
    if path.is_dir():
        from abiprobe.host.installed import facts_from_directory

        facts = facts_from_directory(path)
        meta = facts.metadata
        filename = f"{meta.name.replace('-', '_')}-{meta.version}-py3-none-any.whl"
        return Item(text, IndexFile(filename, path.absolute().as_uri()), facts)
    if text.startswith(("http://", "https://")) or "==" in text:
        file = remote_file(text, source, target)
        try:
            return Item(text, file, source.remote_facts(file))
        except UsageError:
            raise
        except AbiprobeError as exc:
            if not tolerate_unread:
                raise
            return Item(text, file, None, unread=str(exc))
    raise UsageError(f"{text}: not a .whl file, a directory, a wheel URL or PROJECT==VERSION")
