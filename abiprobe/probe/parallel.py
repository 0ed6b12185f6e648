"""probe_sets: plan layers, install them, import every set, in parallel within a CPU and disk budget."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from abiprobe.binary.wheel import top_level_of
from abiprobe.binary.wheel_members import installed_path
from abiprobe.binary.zipguard import check_archive, open_zip
from abiprobe.errors import AbiprobeError, UsageError, WheelFormatError
from abiprobe.model.facts import WheelInfo
from abiprobe.model.stack import default_stack
from abiprobe.probe.bytecode import BytecodeStore, layer_key, mirror
from abiprobe.probe.classify import Failure
from abiprobe.probe.execute import PreparedSet, RunContext, build_result, run_fresh, run_server
from abiprobe.probe.interpreters import find_interpreter
from abiprobe.probe.layers import DEFAULT_MAX_BYTES, KeptLayer, LayerStore, kept_layer_key
from abiprobe.probe.model import ProbeOptions, ProbeResult, ProbeSet
from abiprobe.probe.plan import Layer, overlay_wheels, plan_layers
from abiprobe.probe.procs import ProcessRegistry
from abiprobe.probe.stub import build_stub, driver_symbols, host_has_driver, links_driver, stub_key
from abiprobe.probe.venv import (
    Installer,
    InstallError,
    create_venv,
    find_installer,
    install_overlay,
    install_wheels,
    site_packages,
    venv_python,
)
from abiprobe.store.localstate import local_sha256, local_state_dir
from abiprobe.store.reads import local_wheel_info, stored_local_summary
from abiprobe.ui import interrupt

FactsLoader = Callable[[Path], WheelInfo]


def _local_summary(wheel: Path) -> WheelInfo:
    """A local wheel's summary (all a probe reads of it: its files, sha256 and driver imports), from the
    cache else its file, whose facts are then kept as the built-in stack's rules read them."""
    return local_wheel_info(wheel, unread_sources=default_stack().unread_sources())


_RUNNER = Path(__file__).with_name("runner.py")


def wheel_tops(wheel: Path) -> tuple[str, ...]:
    """Top-level import names a wheel installs: from its cached summary, else its zip listing."""
    summary = stored_local_summary(wheel)
    if summary is not None:
        return tuple(sorted(top_level_of(installed_path(n) for n in summary.files)))
    try:
        with open_zip(wheel, wheel.name) as zf:
            names = [installed_path(n) for n in zf.namelist()]
    except WheelFormatError as exc:
        raise InstallError(str(exc)) from None
    return tuple(sorted(top_level_of(names)))


def dist_name(wheel: Path) -> str:
    try:
        return str(parse_wheel_filename(wheel.name)[0])
    except InvalidWheelFilename as exc:
        raise UsageError(f"{wheel.name}: not a wheel filename") from exc


def remove_tree(root: Path, workers: int = 4) -> None:
    """``shutil.rmtree`` spread over threads: an installed torch layer is ~20,000 files, and unlinking in
    different directories proceeds in parallel."""
    parts: list[Path] = [root]
    while len(parts) < 64:
        dirs = [p for p in parts if p.is_dir() and not p.is_symlink()]
        if not dirs:
            break
        widest = dirs[0]
        try:
            children = list(widest.iterdir())
        except OSError:
            break
        if not children:
            break
        parts.remove(widest)
        parts += children

    def remove(p: Path) -> None:
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                p.unlink()

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(remove, parts))
    shutil.rmtree(root, ignore_errors=True)


def validate(sets: Sequence[ProbeSet]) -> None:
    labels: set[str] = set()
    for s in sets:
        if not s.wheels:
            raise UsageError(f"probe set {s.label!r} has no wheels")
        if s.label in labels:
            raise UsageError(f"two probe sets share the label {s.label!r}")
        labels.add(s.label)
        names = [dist_name(w) for w in s.wheels]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise UsageError(f"probe set {s.label!r} holds several wheels of {', '.join(dupes)}")
        for w in s.wheels:
            if not w.is_file():
                raise UsageError(f"{w} does not exist")
            refuse_bomb(w)


def refuse_bomb(wheel: Path) -> None:
    """A wheel whose members' declared sizes break the readers' inflation caps never reaches an
    installer (uv wrote 2 GiB of one such member before failing): one line names the member."""
    with open_zip(wheel, wheel.name) as zf:
        check_archive(zf, wheel.name)


def default_jobs(sets: Sequence[ProbeSet], temp_parent: Path) -> int:
    """As many as there are CPUs, fewer when the free disk would not hold that many installed sets."""
    cpus = os.cpu_count() or 1
    biggest = max((sum(w.stat().st_size for w in s.wheels) for s in sets), default=1)
    free = shutil.disk_usage(temp_parent).free
    by_disk = max(1, int(free // max(1, 4 * biggest)))
    return max(1, min(cpus, by_disk, len(sets)))


class _Prober:
    """One probe_sets call: shared state for the layer workers."""

    def __init__(self, sets: Sequence[ProbeSet], options: ProbeOptions, facts: FactsLoader) -> None:
        self.sets = sets
        self.options = options
        self.facts_loader = facts
        self.procs = ProcessRegistry()
        self._lock = threading.Lock()
        self._facts: dict[Path, WheelInfo] = {}
        self._stubs: dict[str, Path] = {}
        self._driver_here: bool | None = None
        self.bytecode = BytecodeStore()
        self.layers: LayerStore | None = None
        if options.keep_layers:
            bound = options.layer_cache_bytes
            self.layers = LayerStore(max_bytes=DEFAULT_MAX_BYTES if bound is None else bound)

    def facts(self, wheel: Path) -> WheelInfo:
        with self._lock:
            cached = self._facts.get(wheel)
        if cached is None:
            cached = self.facts_loader(wheel)
            with self._lock:
                self._facts[wheel] = cached
        return cached

    def stub_for(self, wheels: Sequence[Path], root: Path) -> Path | None:
        """The stub directory for these wheels, or None when no stub is wanted."""
        mode = self.options.stub_driver
        if mode == "never":
            return None
        if mode == "auto":
            with self._lock:
                if self._driver_here is None:
                    self._driver_here = host_has_driver()
            if self._driver_here:
                return None
        summaries = [self.facts(w).summary for w in wheels]
        if mode == "auto" and not any(links_driver(s) for s in summaries):
            return None
        symbols = driver_symbols(summaries)
        key = stub_key(symbols, self.options.driver_version)
        with self._lock:
            if key not in self._stubs:
                if self.layers is not None:  # kept with the layers: the same symbols give the same stub
                    self._stubs[key] = kept_stub(local_state_dir() / "stubs", key, symbols, self.options)
                else:
                    self._stubs[key] = build_stub(root / "stubs" / key, symbols, self.options.driver_version)
            return self._stubs[key]

    def _install(
        self,
        venv: Path,
        ctx: RunContext,
        layer: Layer,
        installer: Installer,
        overlays: dict[int, tuple[Path, ...]],
        ldir: Path,
        tmp: Path,
        kept: KeptLayer | None,
    ) -> Path:
        """A venv at ``venv`` with the layer's wheels (unless ``kept`` holds them), and each set's own
        wheels beside it, at once; returns the venv's interpreter."""
        py = venv_python(venv) if kept is not None else create_venv(self.procs, ctx.interpreter, venv, tmp)
        with ThreadPoolExecutor(2) as pool:  # a set's own wheels go beside the layer, not into it
            pending = [
                pool.submit(install_overlay, self.procs, installer, py, extra, ldir / f"set{m}" / "site", tmp)
                for m, extra in overlays.items()
                if extra
            ]
            if kept is None:
                install_wheels(self.procs, installer, py, layer.wheels, tmp)
            for f in pending:
                f.result()
        return py

    def _kept(
        self,
        ctx: RunContext,
        layer: Layer,
        installer: Installer,
        overlays: dict[int, tuple[Path, ...]],
        ldir: Path,
        tmp: Path,
        verify: bool,
    ) -> KeptLayer:
        """The layer from the store (checked now when ``verify``), or built there now and kept."""
        assert self.layers is not None
        try:
            shas = [local_sha256(w) for w in layer.wheels]
        except OSError as exc:
            raise InstallError(f"cannot read a layer wheel: {exc}") from exc
        key = kept_layer_key(installer.kind, ctx.interpreter, shas)
        found = self.layers.acquire(key, verify=verify)
        if found is not None:
            self._install(found.venv, ctx, layer, installer, overlays, ldir, tmp, found)
            return found
        built = self.layers.building(key)
        try:
            self._install(built / "venv", ctx, layer, installer, overlays, ldir, tmp, None)
            return self.layers.adopt(key, built)
        except BaseException:
            shutil.rmtree(built, ignore_errors=True)
            interrupt.release(built)
            raise

    def run_layer(
        self, n: int, layer: Layer, ctx: RunContext, inner_jobs: int
    ) -> list[tuple[int, ProbeResult]]:
        """Install and import one layer's sets. A kept layer is checked against its manifest while its
        sets import; should the check fail, the results are dropped and the sets run again on a layer
        built afresh."""
        out = self._run_layer(ctx.temp_root / f"layer{n}", layer, ctx, inner_jobs, trusting=True)
        if out is None:
            out = self._run_layer(ctx.temp_root / f"layer{n}-rebuilt", layer, ctx, inner_jobs, trusting=False)
        assert out is not None
        return out

    def _run_layer(
        self, ldir: Path, layer: Layer, ctx: RunContext, inner_jobs: int, trusting: bool
    ) -> list[tuple[int, ProbeResult]] | None:
        """One attempt; None when a kept layer used without waiting for its check failed the check."""
        tmp = ldir / "tmp"
        tmp.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        pycache: Path | None = None
        key = ""
        restored: dict[Path, int] = {}
        kept: KeptLayer | None = None
        try:
            installer = find_installer(self.options.installer)
            overlays = {m: overlay_wheels(self.sets[m], layer) for m in layer.members}
            if self.layers is not None:
                kept = self._kept(ctx, layer, installer, overlays, ldir, tmp, verify=not trusting)
                py, site = venv_python(kept.venv), site_packages(kept.venv)
                pycache = kept.pycache if self.options.bytecode else None  # its own bytecode, beside it
            else:
                py = self._install(ldir / "venv", ctx, layer, installer, overlays, ldir, tmp, None)
                site = site_packages(ldir / "venv")
            if self.options.bytecode and kept is None:
                pycache = ldir / "pyc"
                key = layer_key(
                    ctx.python_label, ctx.interpreter, [self.facts(w).sha256 for w in layer.wheels]
                )
                restored = self.bytecode.restore(key, pycache, site)
            fork = self.options.fork == "always" or (self.options.fork == "auto" and len(layer.members) > 1)
            fork = fork and bool(layer.preload)
            prepared = []
            for m in layer.members:
                probe = self.sets[m]
                overlay = ldir / f"set{m}" / "site" if overlays[m] else None
                stub = self.stub_for(probe.wheels, ctx.temp_root)
                dists = tuple(dist_name(w) for w in probe.wheels)
                prepared.append(
                    PreparedSet(m, probe, py, site, overlay, ldir / f"set{m}", dists, stub, pycache)
                )
        except InstallError as exc:
            if kept is not None:
                kept.release()
            failure = Failure("install_failed", str(exc), {})
            return [(m, self._failed(ctx, m, failure, ldir)) for m in layer.members]
        except BaseException:
            if kept is not None:
                kept.release()
            raise
        setup = round(time.monotonic() - started, 3)
        intact = True
        try:
            with ThreadPoolExecutor(max(1, inner_jobs) + 1) as pool:
                # the kept layer's files are compared with its manifest while its sets import
                check = pool.submit(kept.intact) if kept is not None and kept.unchecked else None
                if fork:
                    results = run_server(ctx, layer.preload, prepared)
                elif inner_jobs > 1 and len(prepared) > 1:
                    results = list(pool.map(lambda p: run_fresh(ctx, p), prepared))
                else:
                    results = [run_fresh(ctx, p) for p in prepared]
                intact = check is None or check.result()
            if pycache is not None and kept is None:
                self.bytecode.save(key, pycache, site, ctx.temp_root, restored)
        finally:
            if kept is not None:  # bytecode of this run's overlays is not the layer's
                shutil.rmtree(mirror(kept.pycache, ctx.temp_root), ignore_errors=True)
                kept.release()
                if not intact and self.layers is not None:
                    self.layers.discard(kept.key)
            if not self.options.keep:
                remove_tree(ldir)
        if not intact:
            return None
        for r in results:
            r.detail.setdefault("layer_setup_seconds", setup)
            if kept is not None:
                r.detail.setdefault("layer_reused", kept.reused)
            elif pycache is not None:
                r.detail.setdefault("bytecode_files_restored", len(restored))
        return [(p.index, r) for p, r in zip(prepared, results, strict=True)]

    def _failed(self, ctx: RunContext, m: int, failure: Failure, ldir: Path) -> ProbeResult:
        probe = self.sets[m]
        p = PreparedSet(m, probe, Path(), ldir, None, ldir, (), None)
        return build_result(ctx, p, failure, None, "fresh", 0.0)


def kept_stub(root: Path, key: str, symbols: Sequence[tuple[str, str | None]], options: ProbeOptions) -> Path:
    """The driver stub of ``key`` kept under ``root``: built once (in a temporary directory, renamed
    into place whole), then reused."""
    dest = root / key
    if (dest / "libcuda.so.1").is_file():
        return dest
    root.mkdir(parents=True, exist_ok=True)
    temp = interrupt.temp_dir(root, f".{key}-")
    try:
        build_stub(temp, symbols, options.driver_version)
        try:
            os.rename(temp, dest)
        except OSError:  # another run put it there first
            if not (dest / "libcuda.so.1").is_file():
                raise
    finally:
        shutil.rmtree(temp, ignore_errors=True)
        interrupt.release(temp)
    return dest


def _tops_for_plan(sets: Sequence[ProbeSet], options: ProbeOptions) -> dict[Path, tuple[str, ...]]:
    """The import names of the wheels, where the plan uses them: to group several sets into shared layers,
    and to pick a fork-server's preload. A lone set forked only on ``fork="always"``; otherwise its one
    layer holds its wheels whatever they install, so its wheels' file lists (~35,000 names for a torch
    stack) are not gone through."""
    if len(sets) == 1 and options.fork != "always":
        return {}
    return {w: wheel_tops(w) for s in sets for w in s.wheels}


def probe_sets(
    sets: Sequence[ProbeSet], options: ProbeOptions | None = None, facts: FactsLoader | None = None
) -> list[ProbeResult]:
    """Install and import each set in a throwaway venv; results come back in the order of ``sets``.

    ``facts`` gives a wheel's summary and facts (default: the cache, found by the file's remembered
    sha256; else the file is inspected) when a driver stub must be built.
    """
    options = options or ProbeOptions()
    if not sets:
        return []
    validate(sets)
    interp = find_interpreter(options.python, [w.name for s in sets for w in s.wheels])
    installer = find_installer(options.installer)
    layers = plan_layers(sets, _tops_for_plan(sets, options))
    parent = options.temp_dir or Path(tempfile.gettempdir())
    jobs = options.jobs or default_jobs(sets, parent)
    root = interrupt.temp_dir(parent, "abiprobe-probe-")
    prober = _Prober(sets, options, facts or _local_summary)
    try:
        with interrupt.on_stop(prober.procs.cancel):
            runner = root / "runner.py"
            shutil.copyfile(_RUNNER, runner)
            ctx = RunContext(prober.procs, runner, options, interp.path, interp.label, installer.kind, root)
            outer = max(1, min(jobs, len(layers)))
            inner = max(1, jobs // outer)
            results: list[ProbeResult | None] = [None] * len(sets)
            pool = ThreadPoolExecutor(outer)
            try:
                futures: list[Future[list[tuple[int, ProbeResult]]]] = [
                    pool.submit(prober.run_layer, n, layer, ctx, inner) for n, layer in enumerate(layers)
                ]
                for fut in as_completed(futures):
                    for index, result in fut.result():
                        results[index] = result
            except BaseException:
                prober.procs.cancel()
                pool.shutdown(wait=True, cancel_futures=True)
                raise
            pool.shutdown(wait=True)
    finally:
        if not options.keep:
            shutil.rmtree(root, ignore_errors=True)
        interrupt.release(root)
        if prober.layers is not None:
            prober.layers.prune()
    missing = [s.label for s, r in zip(sets, results, strict=True) if r is None]
    if missing:
        raise AbiprobeError(f"no probe result for {', '.join(missing)}")
    return [r for r in results if r is not None]
