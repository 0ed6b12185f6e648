"""A simulation of ld.so and CPython loading a wheel set: sonames, search paths, scopes, symbol binding.

Model (mirrors ld.so and CPython; see DESIGN.md): when torch is in the set, importing it first loads the
CUDA libraries torch preloads from the nvidia wheels (``TORCH_PRELOADS``: libcudart, libcublas, libcudnn ...,
not plugins such as nvshmem's transports that are opened on demand), torch's own ``torch/lib`` libraries and
their DT_NEEDED closure globally (RTLD_GLOBAL); every
extension module is then loaded with RTLD_NOW|RTLD_LOCAL, so its symbols resolve against the global scope
plus its own dependency tree (breadth first) and stay invisible to other extensions. A DT_NEEDED entry is
satisfied by an already loaded soname, then DT_RPATH (only without DT_RUNPATH), then DT_RUNPATH with
``$ORIGIN`` resolved in the layout, then the target's system libraries and the driver's libcuda.so.1.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from abiprobe.analyze.checks import wheel_tags
from abiprobe.analyze.driver_api import driver_symbol_introduced, is_driver_api_name
from abiprobe.analyze.layout import InstalledObject, Layout
from abiprobe.analyze.preloads import preload_order
from abiprobe.analyze.profiles import DRIVER_SONAME, Profile, SystemLibrary, stable_abi_names
from abiprobe.analyze.runtime import runtime_values
from abiprobe.analyze.units import PlannedUnit, plan_units
from abiprobe.model.facts import ElfFacts, SymbolImport, WheelFacts
from abiprobe.model.stack import PackageLoading
from abiprobe.model.target import Target

# Libraries the interpreter itself has loaded before any import: part of the global scope.
INTERPRETER_LIBS = ("libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "libutil.so.1")
# what the NVIDIA driver installs beside libcuda.so.1 (NVML): there on a target with the driver, its
# symbols not known here (fbgemm-gpu's libraries need it by DT_NEEDED)
NVML_SONAME = "libnvidia-ml.so.1"
# the interpreter's own library: ``libpython3.12.so.1.0`` (``libpython3.7m.so.1.0``)
_LIBPYTHON = re.compile(r"^libpython(\d+)\.(\d+)[a-z]*\.so(?:\.[0-9.]+)?$")
# glibc's own libraries: a target's manylinux_2_N platform promises their GLIBC_2.M nodes up to M = N
_GLIBC_FILES = frozenset({"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
                          "libutil.so.1", "libresolv.so.2", "libanl.so.1", "libnsl.so.1",
                          "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"})  # fmt: skip
_GLIBC_NODE = re.compile(r"^GLIBC_(\d+)\.(\d+)(?:\.\d+)?$")
_IGNORED_IMPORTS = frozenset({"__gmon_start__", "_ITM_registerTMCloneTable", "_ITM_deregisterTMCloneTable"})


@dataclass(frozen=True)
class Driver:
    """libcuda.so.1 as the target driver provides it: driver API names, gated by the driver's CUDA version."""

    soname: str = DRIVER_SONAME


Provider = InstalledObject | SystemLibrary | Driver


def interpreter_library(soname: str, python: tuple[int, int]) -> bool:
    """Whether ``soname`` is the shared library of the CPython ``python`` (``libpython3.12.so.1.0``): a
    shared build of that interpreter (python.org's, pyenv's, uv's) has loaded it, and DT_NEEDED matches
    it by soname; a static one (Debian's ``/usr/bin/python3``) has not."""
    m = _LIBPYTHON.match(soname)
    return m is not None and (int(m.group(1)), int(m.group(2))) == python


def provider_name(p: Provider) -> str:
    """Layout path for wheel objects, ``system:<soname>`` / ``driver:<soname>`` otherwise."""
    if isinstance(p, InstalledObject):
        return p.path
    return f"{'driver' if isinstance(p, Driver) else 'system'}:{p.soname}"


@dataclass(frozen=True)
class NeededResolution:
    """How one DT_NEEDED entry of one object was satisfied (``how``: loaded/rpath/runpath/system/driver)."""

    requirer: str
    soname: str
    provider: str | None
    how: str
    # for ``loaded`` by an earlier unit (not globally): whether the search paths would find it anyway
    found_otherwise: bool = True


@dataclass(frozen=True)
class MissingSymbol:
    requirer: str
    symbol: SymbolImport


@dataclass(frozen=True)
class MissingVersion:
    """A version node an object needs from a file that does not define it (ld.so refuses to load)."""

    requirer: str
    file: str
    version: str
    provider: str
    symbols: tuple[str, ...]


@dataclass(frozen=True)
class DriverSymbol:
    """A driver API import newer than the target driver."""

    requirer: str
    name: str
    introduced: tuple[int, int]


@dataclass(frozen=True)
class LoadResult:
    """Everything the simulated loader learned while loading one unit (an extension or a preloaded lib)."""

    path: str
    is_global: bool
    scope: tuple[str, ...]
    needed: tuple[NeededResolution, ...]
    missing_symbols: tuple[MissingSymbol, ...] = ()
    missing_versions: tuple[MissingVersion, ...] = ()
    driver_symbols: tuple[DriverSymbol, ...] = ()
    non_stable: tuple[MissingSymbol, ...] = ()
    # version nodes a system library of a stand-in profile lacks, on a target whose own system is newer
    # than the profile (its libstdc++ may define them): not known either way
    uncertain_versions: tuple[MissingVersion, ...] = ()
    # the objects this load adds, in the order ld.so relocates them (dependencies first)
    relocation_order: tuple[str, ...] = ()

    @property
    def missing_sonames(self) -> tuple[NeededResolution, ...]:
        return tuple(n for n in self.needed if n.provider is None)


_EXPORT_INDEX: dict[str, dict[str, tuple[tuple[str | None, bool], ...]]] = {}


def export_index(obj: InstalledObject) -> dict[str, tuple[tuple[str | None, bool], ...]]:
    """name -> ((version, default), ...) for one object; cached by the object's sha256 when known."""
    key = obj.facts.sha256
    if key is not None and key in _EXPORT_INDEX:
        return _EXPORT_INDEX[key]
    index: dict[str, list[tuple[str | None, bool]]] = {}
    for e in obj.facts.exports:
        index.setdefault(e.name, []).append((e.version, e.default))
    frozen = {k: tuple(v) for k, v in index.items()}
    if key is not None:
        if len(_EXPORT_INDEX) > 4096:
            _EXPORT_INDEX.clear()
        _EXPORT_INDEX[key] = frozen
    return frozen


def _defines(defined: str | None, default: bool, version: str | None) -> bool:
    """Whether an export at version ``defined`` (the default one if ``default``) meets ``version``."""
    return defined is None or (version is None and default) or defined == version


def _matches(entries: Iterable[tuple[str | None, bool]], version: str | None) -> bool:
    return any(_defines(v, default, version) for v, default in entries)


def is_python_symbol(name: str) -> bool:
    return name.startswith(("Py", "_Py"))


def bound_imports(facts: ElfFacts) -> list[SymbolImport]:
    """The imports in the order ld.so looks them up relocating with RTLD_NOW; symbol table order (not
    exact) where the relocation tables were not read."""
    if facts.binding_order is None:
        return list(facts.imports)
    return [facts.imports[i] for i in facts.binding_order if i < len(facts.imports)]


def abi3_floor(obj: InstalledObject, target: Target) -> tuple[int, int]:
    """The CPython version whose stable ABI an ``abi3`` extension declares: the lowest ``cpXY`` of its
    wheel's ``abi3`` tags; the target's Python when no tag says (an abi3 module in a version-tagged wheel)."""
    floors = []
    for tag in wheel_tags(obj.wheel):
        interpreter, _, rest = tag.partition("-")
        if rest.startswith("abi3-") and interpreter.startswith("cp3") and interpreter[3:].isdigit():
            floors.append((3, int(interpreter[3:])))
    return min(floors) if floors else target.python


def relocation_order(
    searchlist: Sequence[Provider],
    deps: dict[str, dict[str, Provider]],
    new_objects: Sequence[InstalledObject],
) -> list[InstalledObject]:
    """The order ld.so relocates a dlopen's new objects in: glibc sorts the search list (the root, then
    its dependencies breadth first) depth first from its end, each object's DT_NEEDED in order, and
    relocates the sorted list from last to first, so dependencies come before what needs them."""
    new = {id(o) for o in new_objects}
    visited: set[int] = set()
    postorder: list[Provider] = []

    def visit(p: Provider) -> None:
        visited.add(id(p))
        if isinstance(p, InstalledObject):
            for dep in deps.get(p.path, {}).values():
                if id(dep) not in visited:
                    visit(dep)
        postorder.append(p)

    for p in reversed(searchlist):
        if id(p) not in visited:
            visit(p)
    return [p for p in postorder if isinstance(p, InstalledObject) and id(p) in new]


class LoaderSimulation:
    """Load a set the way ld.so and CPython would, without running anything; results per unit."""

    def __init__(
        self,
        wheels: Sequence[WheelFacts],
        target: Target,
        profile: Profile,
        rules: Sequence[PackageLoading],
    ) -> None:
        self.layout = Layout(wheels)
        self.rules = tuple(rules)  # the stack's loading data
        self.loaded_by: dict[str, str] = {}  # loaded key -> the unit whose load brought it in
        self.timing_of: dict[str, str] = {}  # unit path -> when its package loads it
        # objects the packages' own code loads only in branches this set and target do not take
        self.not_taken: set[str] = set()
        # the wheels (file names) whose own code, followed, loads a library only in branches this set and
        # target do not take (or after a raise that ends every path): none of it loads here
        self.followed: set[str] = set()
        # loads taken so far whose path abiprobe cannot follow (each may have opened any file of the set)
        self.unfollowed: list[PlannedUnit] = []
        # unit path -> the unfollowed loads taken before it (a later one, or one the package makes only
        # on first use, cannot have opened anything before an import-time unit)
        self.unfollowed_before: dict[str, tuple[PlannedUnit, ...]] = {}
        # bare names loaded through the system's search: whether each was found when it was loaded (what
        # loads later, a library of the prefix by its soname, is no answer to that earlier search)
        self.found_then: dict[str, bool] = {}
        self.target = target
        self.profile = profile
        self.driver = Driver() if profile.driver else None
        self.global_scope: list[Provider] = []
        self.loaded: dict[str, Provider] = {}
        # name -> (version, default, position in global_scope) of every export of a global wheel object
        self._global_index: dict[str, tuple[tuple[str | None, bool, int], ...]] = {}
        self._owns_index = True  # False once shared with a copy (with_wheel): the first to write copies it
        self._global_system: list[tuple[int, SystemLibrary]] = []  # (position, library) in global_scope
        self.preloaded: list[LoadResult] = []
        for soname in INTERPRETER_LIBS:
            lib = profile.library(soname)
            if lib is not None:
                self._join_global(lib)
                self.loaded[soname] = lib
        for obj in self.preload_order():
            if obj.path not in self.loaded:
                self.preloaded.append(self._load(obj, is_global=True))
                self.unfollowed_before[obj.path] = ()

    def with_wheel(self, wheel: WheelFacts) -> LoaderSimulation:
        """A simulation with one more wheel whose units load on top of this state (copied, not shared)."""
        new = copy.copy(self)
        new.layout = self.layout.with_wheel(wheel)
        new.loaded, new.loaded_by, new.timing_of = (
            dict(self.loaded),
            dict(self.loaded_by),
            dict(self.timing_of),
        )
        new.global_scope = list(self.global_scope)
        new.not_taken = set(self.not_taken)
        new.followed = set(self.followed)
        new.unfollowed = list(self.unfollowed)
        new.unfollowed_before = dict(self.unfollowed_before)
        new.found_then = dict(self.found_then)
        # shared, copied by whichever of the two joins the global scope first (a kernel's units load
        # RTLD_LOCAL, so a pair on a torch base usually never copies the base's index of every export)
        self._owns_index = new._owns_index = False
        new._global_system = list(self._global_system)
        return new

    def _join_global(self, p: Provider) -> None:
        """Append ``p`` to the global scope (RTLD_GLOBAL), indexing what it defines by its position."""
        at = len(self.global_scope)
        self.global_scope.append(p)
        if isinstance(p, InstalledObject):
            if not self._owns_index:
                self._global_index, self._owns_index = dict(self._global_index), True
            index = self._global_index
            for name, entries in export_index(p).items():
                index[name] = (*index.get(name, ()), *((v, d, at) for v, d in entries))
        elif isinstance(p, SystemLibrary):
            self._global_system.append((at, p))

    def plan(self, wheels: Sequence[WheelFacts] | None = None) -> list[PlannedUnit]:
        """The units of ``wheels`` (default: every wheel of the set) in the order their packages load them."""
        chosen = self.layout.wheels if wheels is None else wheels
        values = runtime_values(self.target, self.layout.wheels)
        return plan_units(
            self.layout, chosen, self.rules, values, self.not_taken, self._system_provides, self.followed
        )

    def _system_provides(self, name: str) -> bool:
        """Whether the target's system provides a library by this name (the driver's, where it has one)."""
        return self.profile.library(name) is not None or (name == DRIVER_SONAME and self.driver is not None)

    def load_unit(self, unit: PlannedUnit) -> LoadResult:
        """Load one planned unit (RTLD_LOCAL, as CPython and ctypes do); what it loads stays loaded, so a
        later unit's DT_NEEDED is met by its soname."""
        self.timing_of[unit.path] = unit.timing
        return self._load(self.layout.objects[unit.path], is_global=False)

    def preload_order(self) -> list[InstalledObject]:
        """What importing the set's packages loads globally first (the stack data's preloads)."""
        return preload_order(self.layout, self.rules)

    def load_extension(self, path: str) -> LoadResult:
        """Load one extension module (RTLD_LOCAL) after the global preloads; the global state is unchanged."""
        return self._load(self.layout.objects[path], is_global=False)

    def load_all(self) -> list[tuple[PlannedUnit | None, LoadResult | None, bool]]:
        """The preloaded units (no plan), then every planned unit of the set in load order."""
        units: list[tuple[PlannedUnit | None, LoadResult | None, bool]] = [
            (None, r, True) for r in self.preloaded
        ]
        return [*units, *self.load_plan(self.plan())]

    def load_plan(
        self, units: Sequence[PlannedUnit]
    ) -> list[tuple[PlannedUnit | None, LoadResult | None, bool]]:
        """Load the planned units in order, each only when the outcomes it runs after hold (a candidate of a
        try-list after the earlier ones failed, the package's own ``raise`` after all did): each taken unit,
        its load result (None for one that is not an object of the set) and whether it loaded."""
        outcomes: dict[str, bool] = {}
        out: list[tuple[PlannedUnit | None, LoadResult | None, bool]] = []
        for u in units:
            if not any(all(outcomes.get(key) is want for key, want in c) for c in u.reached_on):
                continue
            result: LoadResult | None = None
            if u.loads_object:
                if u.path in self.loaded:
                    outcomes[u.path] = True
                    continue
                self.unfollowed_before[u.path] = tuple(
                    x for x in self.unfollowed if u.timing != "import" or x.timing in ("import", "unknown")
                )
                result = self.load_unit(u)
                ok = not (result.missing_sonames or result.missing_versions or result.missing_symbols
                          or result.driver_symbols)  # fmt: skip
            elif u.how == "soname":
                name = u.path.split(":", 1)[1]
                ok = (
                    name in self.loaded
                    or self.profile.library(name) is not None
                    or (name == DRIVER_SONAME and self.driver is not None)
                )
                self.found_then[u.path] = ok
            else:
                ok = u.how != "absent"
                if u.how == "unresolved":
                    self.unfollowed.append(u)
            outcomes[u.path] = ok
            out.append((u, result, ok))
        return out

    def _by_soname(self, soname: str, local: dict[str, Provider]) -> Provider | None:
        return self.loaded.get(soname) or local.get(soname)

    def _find(
        self, obj: InstalledObject, soname: str, loaders: dict[str, InstalledObject]
    ) -> tuple[InstalledObject | None, str]:
        """RPATH of the requirer and then of each object up its loader chain (only when the requirer has
        no RUNPATH, as in glibc's ld.so), then the requirer's RUNPATH."""
        if not obj.facts.runpath:
            chain: InstalledObject | None = obj
            while chain is not None:
                for d in self.layout.search_dirs(chain, chain.facts.rpath):
                    hit = self.layout.find(d, soname)
                    if hit is not None:
                        return hit, "rpath"
                chain = loaders.get(chain.path)
        for d in self.layout.search_dirs(obj, obj.facts.runpath):
            hit = self.layout.find(d, soname)
            if hit is not None:
                return hit, "runpath"
        return None, ""

    def _load(self, root: InstalledObject, *, is_global: bool) -> LoadResult:
        local: dict[str, Provider] = {root.path: root}
        if root.facts.soname:
            local[root.facts.soname] = root
        order: list[Provider] = [root]
        new_objects: list[InstalledObject] = [root]
        needed: list[NeededResolution] = []
        deps: dict[str, dict[str, Provider]] = {}
        loaders: dict[str, InstalledObject] = {}
        queue = [root]
        while queue:
            obj = queue.pop(0)
            deps[obj.path] = {}
            for soname in obj.facts.needed:
                prov = self._by_soname(soname, local)
                how = "loaded"
                if isinstance(prov, InstalledObject) and prov not in self.global_scope and prov not in order:
                    queue.append(prov)  # loaded by an earlier unit: its own dependencies join this scope
                if prov is None:
                    hit, how = self._find(obj, soname, loaders)
                    if hit is not None:
                        prov = self._by_soname(hit.path, local) or (
                            self._by_soname(hit.facts.soname, local) if hit.facts.soname else None
                        )
                        if prov is None:
                            prov = hit
                            new_objects.append(hit)
                            loaders[hit.path] = obj
                            queue.append(hit)
                            local[hit.path] = hit
                if prov is None:
                    lib = self.profile.library(soname)
                    if lib is not None:
                        prov, how = lib, "system"
                    elif soname == DRIVER_SONAME and self.driver is not None:
                        prov, how = self.driver, "driver"
                    elif soname == NVML_SONAME and self.driver is not None:
                        prov, how = SystemLibrary(NVML_SONAME), "driver"
                    elif not (
                        self.profile.this_host and self.profile.knows_interpreter
                    ) and interpreter_library(soname, self.target.python):
                        # there when the target's interpreter is a shared build: which it is is not known
                        # (its C API is the interpreter's, bound as every extension's is: nothing else)
                        prov, how = SystemLibrary(soname, exports={}), "interpreter"
                if prov is None:
                    needed.append(NeededResolution(obj.path, soname, None, "missing"))
                    continue
                otherwise = True
                if how == "loaded" and soname in self.loaded_by and soname not in local:
                    otherwise = (
                        self._find(obj, soname, loaders)[0] is not None
                        or self.profile.library(soname) is not None
                        or (soname in (DRIVER_SONAME, NVML_SONAME) and self.driver is not None)
                    )
                local[soname] = prov
                deps[obj.path][soname] = prov
                if prov not in order:
                    order.append(prov)
                needed.append(NeededResolution(obj.path, soname, provider_name(prov), how, otherwise))
        scope = [p for p in self.global_scope if p not in order] + order
        relocated = relocation_order(order, deps, new_objects)
        result = self._bind(root, is_global, scope, relocated, deps, needed)
        if is_global:
            for p in order:
                if p not in self.global_scope:
                    self._join_global(p)
        failed = (
            result.missing_sonames
            or result.missing_versions
            or result.missing_symbols
            or result.driver_symbols
        )
        if is_global or not failed:
            # a load that succeeded leaves its objects in the process: later DT_NEEDED entries match them
            for key, p in local.items():
                if key not in self.loaded:
                    self.loaded[key] = p
                    self.loaded_by[key] = root.path
        return result

    def lookup(self, imp: SymbolImport, scope: Sequence[Provider] = ()) -> Provider | None:
        """What ld.so binds ``imp`` to: the first object of the global scope, in load order, that defines
        it, else the first of ``scope`` (a unit's search list) that does; None when none does. A system
        library the profile knows nothing about (opaque) may define anything, so it counts as defining it."""
        wheel_at = next(
            (at for v, d, at in self._global_index.get(imp.name, ()) if _defines(v, d, imp.version)),
            None,
        )
        for at, lib in self._global_system:
            if wheel_at is not None and at > wheel_at:
                break
            if lib.provides(imp.name, imp.version) is not False:
                return lib  # loaded before that object (libc first): ld.so finds it there first
        if wheel_at is not None:
            return self.global_scope[wheel_at]
        for p in scope:
            if p in self.global_scope:
                continue  # searched above
            if isinstance(p, InstalledObject):
                if _matches(export_index(p).get(imp.name, ()), imp.version):
                    return p
            elif isinstance(p, SystemLibrary) and p.provides(imp.name, imp.version) is not False:
                return p
        return None

    def _bind(
        self,
        root: InstalledObject,
        is_global: bool,
        scope: list[Provider],
        new_objects: list[InstalledObject],  # in relocation order
        deps: dict[str, dict[str, Provider]],
        needed: list[NeededResolution],
    ) -> LoadResult:
        missing: list[MissingSymbol] = []
        versions: list[MissingVersion] = []
        uncertain: list[MissingVersion] = []
        driver: list[DriverSymbol] = []
        non_stable: list[MissingSymbol] = []
        driver_in_scope = self.driver is not None and self.driver in scope
        searched = [provider_name(p) for p in scope]
        for obj in sorted(new_objects, key=lambda o: searched.index(o.path)):
            for m in self._check_versions(obj, deps.get(obj.path, {})):
                verdict = self._newer_system(m)
                if verdict is None:
                    versions.append(m)
                elif verdict == "unknown":
                    uncertain.append(m)
        for obj in new_objects:
            abi3 = obj.extension_python == "abi3"
            stable = stable_abi_names(abi3_floor(obj, self.target)) if abi3 else None
            for imp in bound_imports(obj.facts):
                if imp.weak or imp.name in _IGNORED_IMPORTS:
                    continue
                if is_python_symbol(imp.name):
                    if stable is not None and imp.name not in stable:
                        non_stable.append(MissingSymbol(obj.path, imp))
                    continue
                if self.lookup(imp, scope) is not None:
                    continue
                if driver_in_scope and is_driver_api_name(imp.name):
                    introduced = driver_symbol_introduced(imp.name)
                    if introduced is not None and introduced > self.target.driver_cuda:
                        driver.append(DriverSymbol(obj.path, imp.name, introduced))
                    continue
                if imp.version and imp.version_file:
                    # a node of a system library that a newer target's system has (or may have): the
                    # version check above said so (``unknown`` there), the symbol is not missing
                    prov = deps.get(obj.path, {}).get(imp.version_file)
                    if prov is not None and self._newer_node(imp.version_file, imp.version,
                                                             provider_name(prov)) is not None:  # fmt: skip
                        continue
                missing.append(MissingSymbol(obj.path, imp))
        return LoadResult(
            path=root.path,
            is_global=is_global,
            scope=tuple(provider_name(p) for p in scope),
            needed=tuple(needed),
            missing_symbols=tuple(missing),
            missing_versions=tuple(versions),
            uncertain_versions=tuple(uncertain),
            driver_symbols=tuple(driver),
            non_stable=tuple(non_stable),
            relocation_order=tuple(o.path for o in new_objects),
        )

    def _newer_system(self, m: MissingVersion) -> str | None:
        return self._newer_node(m.file, m.version, m.provider)

    def _newer_node(self, file: str, version: str, provider: str) -> str | None:
        """What a version node that a system library of the profile lacks is on a target whose platform
        is newer than the profile (manylinux_2_36 judged with the manylinux_2_34 libraries): ``"ok"`` for
        a GLIBC_2.M of glibc's own libraries that the platform promises, ``"unknown"`` for another
        library's (the target's libstdc++ is its distribution's, possibly newer); None (missing) when the
        profile is the target's own system or the node is newer than the platform."""
        if self.profile.this_host or not provider.startswith("system:"):
            return None
        wanted, have = self.target.glibc, self.profile.glibc
        if wanted is None or have is None or wanted <= have:
            return None
        node = _GLIBC_NODE.match(version)
        if node is not None:
            if file in _GLIBC_FILES and (int(node.group(1)), int(node.group(2))) <= wanted:
                return "ok"
            return None
        return "unknown"

    def _check_versions(self, obj: InstalledObject, deps: dict[str, Provider]) -> list[MissingVersion]:
        out: list[MissingVersion] = []
        for need in obj.facts.version_needs:
            prov = deps.get(need.file) or self.loaded.get(need.file)
            if prov is None or isinstance(prov, Driver):
                continue
            if isinstance(prov, InstalledObject):
                defined = set(prov.facts.version_defs)
                if not defined:
                    continue
            else:
                if prov.opaque:
                    continue
                defined = set(prov.versions)
            for version in need.versions:
                if version not in defined:
                    users = tuple(
                        i.name
                        for i in obj.facts.imports
                        if i.version == version and i.version_file == need.file
                    )
                    out.append(MissingVersion(obj.path, need.file, version, provider_name(prov), users))
        return out
