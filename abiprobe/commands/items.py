"""Every argument that names a wheel, as the wheel the *target* would get: one typed ``Item`` per argument.

What an argument names is decided once, by ``abiprobe.commands.item_specs.parse_item``; :func:`facts_of`
reads a spec: a local ``.whl``, a directory (an unpacked wheel or a tree of binaries), a wheel URL, or
``PROJECT==VERSION``, which is looked up on the configured indexes with the target's tags (never this
host's; only a command without a target, such as ``inspect``, takes this host's), an installed
distribution, or a local file (an ELF object). What pip would install beside the items is
``abiprobe.solve.install``'s job. A wheel whose bytes cannot be read is still an item: its ``unread``
says why, so every check needing its bytes is ``unknown`` rather than the command giving up.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from abiprobe.commands.item_specs import (
    Accepts,
    DirectorySpec,
    InstalledSpec,
    ItemSpec,
    LocalFileSpec,
    PinnedSpec,
    WheelFileSpec,
    WheelSpec,
    WheelUrlSpec,
)
from abiprobe.errors import AbiprobeError, UsageError
from abiprobe.index.client import IndexClient
from abiprobe.index.config import IndexConfig, load_index_config
from abiprobe.index.remote_items import index_file_from_url, pick_candidate, remote_member
from abiprobe.model.candidate import Candidate, IndexFile
from abiprobe.model.facts import ElfFacts, WheelFacts, WheelInfo
from abiprobe.model.target import Target
from abiprobe.net.http import Http
from abiprobe.solve.ports import FullFacts
from abiprobe.store.cache import Cache
from abiprobe.store.reads import LocalFacts, WheelReads

if TYPE_CHECKING:
    from abiprobe.model.stack import Stack

ItemKind = Literal["wheel", "directory", "remote", "installed"]


@dataclass(frozen=True)
class Item:
    """One argument as a wheel: its facts (None with ``unread`` when its bytes could not be read), where
    it comes from (``kind``, ``file``; a directory is ``text`` itself), and the local wheel file."""

    text: str
    kind: ItemKind
    file: IndexFile
    info: WheelInfo | None  # the summary now, the full facts on first use (``facts``)
    local: Path | None = None
    unread: str | None = None
    loads: FullFacts = field(kw_only=True, compare=False, repr=False)  # where ``facts`` are loaded from

    @property
    def facts(self) -> WheelFacts | None:
        """The full facts (decoding a big wheel's symbol tables costs seconds: a probe needs none)."""
        return self.loads.full(self.info) if self.info is not None else None

    @property
    def label(self) -> str:
        if self.info is not None:
            return f"{self.info.summary.metadata.name} {self.info.summary.metadata.version}"
        return self.file.filename


class ItemSource:
    """The I/O remote items and install closures need, made on first use and shared by the whole command:
    one HTTP client, the wheel cache, and an index client over ``--index-url`` (else the user's
    installer configuration)."""

    def __init__(
        self,
        cache_dir: Path | None,
        index_urls: list[str] | None,
        offline: bool,
        progress: bool,
        *,
        extra_indexes: Sequence[str] | None = None,
        strategy: str | None = None,
        find_links: Sequence[str] = (),
    ):
        self.cache = Cache(cache_dir)
        self.index_urls, self.offline, self.progress = index_urls or [], offline, progress
        self.extra_indexes, self.strategy = list(extra_indexes or []), strategy
        self.find_links = tuple(find_links)
        self._http: Http | None = None
        self._client: IndexClient | None = None
        self._reads: WheelReads | None = None

    @classmethod
    def of(cls, args: argparse.Namespace, *, progress: bool) -> ItemSource:
        """The source the shared index options (``abiprobe.commands.options``) ask for."""
        return cls(
            args.cache_dir,
            args.index,
            args.offline,
            progress,
            extra_indexes=args.extra_index,
            strategy=args.index_strategy,
            find_links=getattr(args, "find_links", None) or (),
        )

    @property
    def http(self) -> Http:
        if self._http is None:
            self._http = Http(progress=self.progress)
        return self._http

    @functools.cached_property
    def config(self) -> IndexConfig:
        return load_index_config(
            cli_indexes=self.index_urls,
            cli_extra_indexes=self.extra_indexes,
            cli_find_links=self.find_links,
            cli_strategy=self.strategy,
        )

    @property
    def client(self) -> IndexClient:
        if self._client is None:
            config = self.config
            self._client = IndexClient(
                config.sources,
                self.cache,
                self.http,
                self.offline,
                strategy=config.strategy,
                pins=config.pins,
            )
        return self._client

    @property
    def reads(self) -> WheelReads:
        """The cache-first reads of listed wheels, published facts fetched first where they are configured
        (``abiprobe.store.published_client``)."""
        if self._reads is None:
            from abiprobe.analyze.preloads import preload_pattern
            from abiprobe.store.published_client import published_facts

            published = published_facts(self.http, self.cache, disabled=False, offline=self.offline)
            self._reads = WheelReads(
                self.http,
                self.cache,
                self.offline,
                published=published,
                listed_as_before=self._listed_as_before,
                preloaded=preload_pattern(self.stack.loading()),
                unread_sources=self.unread_sources,
            )
        return self._reads

    def _listed_as_before(self, file: IndexFile) -> bool:
        """Whether the index client (once made) lists ``file`` as it did before this run."""
        return self._client is not None and self._client.listed_as_before(file)

    def __enter__(self) -> ItemSource:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._http is not None:
            self._http.close()

    def full(self, info: WheelInfo) -> WheelFacts | None:
        """The ``abiprobe.solve.ports.FullFacts`` port of the command's items: a listed wheel's through
        :attr:`reads`, a local wheel's through the cache alone."""
        if isinstance(info.origin, IndexFile):
            return self.reads.full(info)
        return self._local.full(info)

    @functools.cached_property
    def _local(self) -> LocalFacts:
        return LocalFacts(self.cache, unread_sources=self.unread_sources)

    @functools.cached_property
    def stack(self) -> Stack:
        """The stack items are judged with: the built-in one (what a read leaves out follows its data)."""
        from abiprobe.model.stack import default_stack

        return default_stack()

    @property
    def unread_sources(self) -> frozenset[str]:
        return self.stack.unread_sources()

    def remote_facts(self, file: IndexFile) -> WheelFacts:
        """Facts of a remote wheel: the cache first; offline, only a whole cached entry will do."""
        return self.reads.facts(file)

    def holds(self, candidate: Candidate) -> bool:
        """Whether the cache holds complete facts of ``candidate``'s wheel as an offline read takes them."""
        return self.reads.holds(candidate.file)

    def member(self, item: Item, name: str) -> bytes | None:
        """The bytes of the wheel member ``name`` (by range for a remote wheel; None offline, when
        nothing may be fetched)."""
        if item.kind == "directory":
            return (Path(item.text) / name).read_bytes()
        if item.kind == "wheel" and item.local is not None:
            import zipfile

            with zipfile.ZipFile(item.local) as zf:
                return zf.read(name)
        if self.offline:
            return None
        return remote_member(item.file, self.http, self.cache, name)


def remote_file(
    spec: WheelUrlSpec | PinnedSpec, source: ItemSource, target: Target | None, *, prefer_cached: bool = False
) -> IndexFile:
    """The index file a wheel URL or ``PROJECT==VERSION`` names: the one an installer on ``target`` would
    take (without a target, this host's best). ``prefer_cached``: of several that fit, one whose facts
    the cache holds (any of torch's wheels of one version shows the same libraries)."""
    if isinstance(spec, WheelUrlSpec):
        return index_file_from_url(spec.text)
    listing = source.client.list_project(spec.requirement.name)
    prefer = source.holds if prefer_cached else None
    return pick_candidate(listing.candidates, spec.text, prefer, target=target, unread=listing.failed).file


def item_of_file(text: str, file: IndexFile, source: ItemSource, *, tolerate_unread: bool = True) -> Item:
    """A remote index file as an item, read by range (cache first); one that cannot be read is kept,
    marked unread (unless ``tolerate_unread`` is off)."""
    try:
        return Item(text, "remote", file, WheelInfo.of(source.remote_facts(file)), loads=source)
    except UsageError:
        raise
    except AbiprobeError as exc:
        if not tolerate_unread:
            raise
        return Item(text, "remote", file, None, unread=str(exc), loads=source)


def _installed(spec: InstalledSpec, source: ItemSource) -> Item:
    from packaging.utils import canonicalize_name

    from abiprobe.host.installed import installed_distributions

    wanted = {str(canonicalize_name(spec.project))}
    found = installed_distributions(spec.interpreter, wanted, unread_sources=source.unread_sources)
    if not found:
        if spec.text != spec.project:  # the text names the interpreter
            raise UsageError(f"{spec.text}: {spec.project} is not installed for this interpreter")
        where = spec.interpreter or sys.executable
        raise UsageError(
            f"{spec.text}: not a file, and no distribution of that name is installed for {where}"
        )
    facts = found[0].facts
    file = IndexFile(facts.filename, found[0].location.as_uri())
    return Item(spec.text, "installed", file, WheelInfo.of(facts), loads=source)


@overload
def facts_of(
    spec: LocalFileSpec,
    source: ItemSource,
    target: Target | None,
    *,
    tolerate_unread: bool = ...,
    prefer_cached: bool = ...,
) -> ElfFacts: ...
@overload
def facts_of(
    spec: WheelSpec,
    source: ItemSource,
    target: Target | None,
    *,
    tolerate_unread: bool = ...,
    prefer_cached: bool = ...,
) -> Item: ...
def facts_of(
    spec: WheelSpec | LocalFileSpec,
    source: ItemSource,
    target: Target | None,
    *,
    tolerate_unread: bool = True,
    prefer_cached: bool = False,
) -> Item | ElfFacts:
    """The facts ``spec`` names, for ``target`` (None: this host): a local file's as an ELF object, else
    as an item; a remote wheel that cannot be read is kept, marked unread (unless ``tolerate_unread`` is
    off, then its error is raised)."""
    if isinstance(spec, LocalFileSpec):
        from abiprobe.binary.objects import inspect_file

        return inspect_file(spec.path, str(spec.path))
    if isinstance(spec, WheelFileSpec):
        from abiprobe.store.reads import local_wheel_info

        info = local_wheel_info(spec.path, source.cache, unread_sources=source.unread_sources)
        sha = info.summary.sha256
        file = IndexFile(spec.path.name, spec.path.absolute().as_uri(), {"sha256": sha} if sha else {})
        return Item(spec.text, "wheel", file, info, local=spec.path, loads=source)
    if isinstance(spec, DirectorySpec):
        from abiprobe.host.installed import facts_from_directory

        facts = facts_from_directory(spec.path, unread_sources=source.unread_sources)
        meta = facts.metadata
        filename = f"{meta.name.replace('-', '_')}-{meta.version}-py3-none-any.whl"
        file = IndexFile(filename, spec.path.absolute().as_uri())
        return Item(spec.text, "directory", file, WheelInfo.of(facts), loads=source)
    if isinstance(spec, InstalledSpec):
        return _installed(spec, source)
    file = remote_file(spec, source, target, prefer_cached=prefer_cached)
    return item_of_file(spec.text, file, source, tolerate_unread=tolerate_unread)


OneWheel = WheelFileSpec | DirectorySpec | WheelUrlSpec | PinnedSpec  # a spec of one wheel to read
# What a wheel argument is where no command narrows it (an installer's plan, ``resolve_item``).
WHEEL_ITEMS = Accepts("an item is", ("wheel", "directory", "url", "pinned"))


def one_wheel(spec: ItemSpec, accepts: Accepts) -> OneWheel:
    """``spec`` when it names one wheel to read; else ``accepts``' refusal, a usage error of one line."""
    if not isinstance(spec, (WheelFileSpec, DirectorySpec, WheelUrlSpec, PinnedSpec)):
        raise UsageError(accepts.refusal(spec))
    return spec


def wheel_spec(text: str, accepts: Accepts = WHEEL_ITEMS) -> OneWheel:
    """``text`` as a spec of one wheel, when ``accepts`` takes its kind (a usage error of one line if not)."""
    return one_wheel(accepts.spec(text), accepts)


def resolve_item(
    text: str,
    source: ItemSource,
    target: Target | None,
    *,
    tolerate_unread: bool = True,
    prefer_cached: bool = False,
) -> Item:
    """``text`` (a wheel file, a directory, a wheel URL or ``PROJECT==VERSION``) as an Item for
    ``target``: :func:`facts_of` of its spec."""
    spec = wheel_spec(text)
    return facts_of(spec, source, target, tolerate_unread=tolerate_unread, prefer_cached=prefer_cached)
