"""`abiprobe probe WHEEL...`: install one exact set of local wheels in a throwaway venv and import it."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abiprobe.commands.item_specs import Accepts, WheelFileSpec
from abiprobe.commands.options import add_index_options, add_target_options
from abiprobe.errors import UsageError
from abiprobe.model.stack import default_stack
from abiprobe.model.target import driver_api_version
from abiprobe.probe import PROBE_SCHEMA_VERSION, ProbeOptions, ProbeSet, probe_sets
from abiprobe.probe.layers import parse_size
from abiprobe.probe.parallel import wheel_tops
from abiprobe.report.jsondoc import envelope, json_text
from abiprobe.store.primitives import write_text_atomic

PROBE_KIND = "abiprobe-probe"
# A directory cannot be installed: probe takes wheels, and what names them.
PROBE_ITEMS = Accepts(
    "probe takes", ("wheel", "url", "pinned", "name", "requirement", "requirements", "pylock")
)

if TYPE_CHECKING:  # what a lone probe of local wheels, printed as JSON, never needs is imported on use
    from abiprobe.model.candidate import IndexFile
    from abiprobe.net.http import Http
    from abiprobe.solve.install import AddedWheel


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "probe",
        help="install an exact set of wheels in a throwaway venv and import it for real",
        description="Installs WHEEL_OR_REQ... (local wheels, wheel URLs or PROJECT==VERSION, looked up with "
        "the tags of --python) and what pip would install beside them, fetched hash-checked into "
        "--wheels-dir, into a throwaway venv (offline, exactly those wheels) and imports the named "
        "packages in order, in a clean subprocess. On hosts without a CUDA driver a stub libcuda.so.1 "
        "stands in for it; with a GPU a smoke test runs one kernel.",
    )
    p.add_argument(
        "items",
        nargs="*",
        metavar="WHEEL_OR_REQ",
        help="wheel files, URLs, pylock.toml files or requirements (PROJECT==VERSION, ranges, bare names)",
    )
    p.add_argument(
        "--no-deps", action="store_true", help="install the named items alone, not what they require"
    )
    add_index_options(p, index_help="index to look PROJECT==VERSION up in (repeatable)")
    p.add_argument(
        "--installed",
        action="store_true",
        help="probe the environment of --python as it is; with REQ...: as the installer's dry run of "
        "installing them there would leave it (its wheels on top, in an overlay)",
    )
    add_target_options(
        p,
        python_help="target Python: a version (3.12) or an interpreter path",
        cuda=False,
        arch=False,
        driver=False,
    )
    p.add_argument(
        "--import-order",
        help="comma-separated modules to import, in order (default: the wheels' packages, in argument order)",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="seconds allowed per set (default 120)")
    p.add_argument("--jobs", type=int, help="probes run at once (default: from CPUs and free disk)")
    p.add_argument("--keep", action="store_true", help="keep the venvs and logs; print where they are")
    p.add_argument(
        "--installer",
        choices=("auto", "uv", "pip"),
        default="auto",
        help="what installs the set (auto: uv if found); with --installed REQ: whose dry run says what "
        "changes (auto: the user's installer)",
    )
    from abiprobe.commands.installed_plan import add_plan_options
    from abiprobe.commands.user_items import add_requirement_options

    add_plan_options(p)
    add_requirement_options(p)
    p.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile every layer's Python modules afresh instead of reusing bytecode saved by earlier runs",
    )
    p.add_argument(
        "--keep-layers",
        action="store_true",
        help="keep each installed layer (keyed by its wheels' sha256) and reuse it in later runs",
    )
    p.add_argument(
        "--layer-cache-size",
        default="20G",
        metavar="SIZE",
        help="bound of the kept layers, least recently used removed first (default 20G)",
    )
    p.add_argument(
        "--stub-driver",
        choices=("auto", "always", "never"),
        default="auto",
        help="a stub libcuda.so.1 for the import (auto: only where no driver is installed)",
    )
    p.add_argument("--driver-version", default="13.0", help="CUDA version the stub driver reports (13.0)")
    p.add_argument("--expect", choices=("ok", "fail"), help="the static verdict, to flag a disagreement")
    p.add_argument("--no-smoke", action="store_true", help="skip the GPU smoke test even with a GPU")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    job = p.add_argument_group("probe jobs (docs/probe-jobs.md)")
    job.add_argument("--job", type=Path, metavar="FILE", help="run a job of a `solve --emit-probe-jobs` file")
    job.add_argument("--job-id", metavar="ID", help="which job of the file (needed when it holds several)")
    job.add_argument("--result", type=Path, metavar="FILE", help="write the job's result document here")
    job.add_argument("--wheels-dir", type=Path, metavar="DIR", help="where job wheels are kept / fetched")
    job.add_argument("--no-download", action="store_true", help="use only wheels already in --wheels-dir")
    p.set_defaults(func=run)


def default_import_order(wheels: list[Path]) -> tuple[str, ...]:
    order: list[str] = []
    for w in wheels:
        for top in wheel_tops(w):
            if top not in order:
                order.append(top)
    return tuple(order)


def _run_job_command(args: argparse.Namespace) -> int:
    """``abiprobe probe --job FILE [--job-id ID]``: exit 0 when the set imports and agrees with the matrix."""
    from abiprobe.probe.job_runner import run_job
    from abiprobe.probe.jobs import load_jobs, select_job

    job = select_job(load_jobs(args.job), args.job_id)
    wheels_dir = args.wheels_dir or Path(tempfile.gettempdir()) / "abiprobe-job-wheels"
    opts = probe_options(args, args.python or job["python"])
    doc = run_job(job, wheels_dir, opts, download=not args.no_download)
    text = json_text(doc)
    if args.result is not None:
        write_text_atomic(args.result, text)
    if args.json or args.result is None:
        sys.stdout.write(text)
    else:
        print(f"{job['id']}: {doc['result']['explanation']} -> {args.result}")
    res = doc["result"]
    return 0 if res["outcome"] == "ok" and not res["disagrees"] else 1


def run(args: argparse.Namespace) -> int:
    if args.job is not None:
        return _run_job_command(args)
    if not args.items and not args.requirement and not args.installed:
        raise UsageError(
            "give wheel files, URLs or PROJECT==VERSION, --installed to probe an existing environment, "
            "or --job FILE"
        )
    plan = None
    added: tuple[AddedWheel, ...]
    if args.installed and (args.items or args.requirement or args.constraint):
        from abiprobe.commands.probe_plan import planned_overlay

        plan, wheels, planned_order = planned_overlay(args, _fetched)
        named, added = wheels, ()
    else:
        named, wheels, added = wheel_files(args)
    if args.import_order:
        order = tuple(m.strip() for m in args.import_order.split(",") if m.strip())
    elif plan is not None:
        order = planned_order
    elif args.installed and not named:
        from abiprobe.probe.environment import installed_stack_order

        order = installed_stack_order(args.python or sys.executable, default_stack())
        if not order:
            raise UsageError(
                "no stack package (torch, a kernel, flashinfer) is installed there: pass --import-order"
            )
    else:
        order = default_import_order(named)
    if not order:
        raise UsageError("nothing to import: pass --import-order")
    options = probe_options(args, args.python)
    label = " + ".join(w.name for w in named)
    if args.installed:
        from abiprobe.probe.environment import probe_environment

        replacing = plan.changed if plan is not None else None
        python = args.python or sys.executable
        results = [probe_environment(python, order, options, wheels, replacing, stack=default_stack())]
    else:
        results = probe_sets([ProbeSet(tuple(wheels), order, label, expected=args.expect)], options)
    if args.json:
        doc: dict[str, Any] = {
            "results": [r.to_json() for r in results],
            "added": [a.to_json() for a in added],
        }
        if plan is not None:
            doc["plan"] = plan.to_json()
        sys.stdout.write(json_text(envelope(PROBE_KIND, doc, PROBE_SCHEMA_VERSION)))
    else:
        from abiprobe.report.probe_text import render_result
        from abiprobe.ui.console import make_console, print_all

        if plan is not None:
            from abiprobe.commands.check_plan import plan_lines

            print("\n".join(plan_lines(plan, ())))
        if added:
            print(f"installed with what the install closure adds ({len(added)}):")
            for a in added:
                print(f"  + {a.label}: {a.why}")
        console = make_console()
        for r in results:
            print_all(render_result(r), console)
    return 0 if all(r.outcome == "ok" and not r.disagrees for r in results) else 1


def wheel_files(args: argparse.Namespace) -> tuple[list[Path], list[Path], tuple[AddedWheel, ...]]:
    """(the named items' wheel files, every wheel file to install, what the closure added): local wheels
    as they are, remote ones fetched hash-checked into ``--wheels-dir``; unless ``--no-deps`` (or
    ``--installed``), what pip would install beside them too."""
    import tempfile

    from abiprobe.commands.itemset import gather
    from abiprobe.commands.options import target_of, target_python

    specs = [PROBE_ITEMS.spec(i) for i in args.items]
    local_only = all(isinstance(s, WheelFileSpec) for s in specs) and not args.requirement
    if local_only and (args.no_deps or args.installed):
        local = [Path(i).absolute() for i in args.items]
        return local, local, ()
    from abiprobe.commands.user_items import user_items

    target = target_of(args, python=target_python(args.python))
    into = args.wheels_dir or Path(tempfile.gettempdir()) / "abiprobe-job-wheels"
    wants = user_items(specs, args, target, PROBE_ITEMS)
    with wants.source(args, progress=not args.json) as source:
        no_deps = args.no_deps or args.installed
        found = gather(
            wants.exact, target, source, no_deps=no_deps, wanted=wants.wants(), options=wants.options()
        )
        if found.unread:
            label, reason = found.unread[0]
            raise UsageError(f"{label}: cannot be installed, its wheel could not be read ({reason})")
        if found.closure_error is not None:
            raise UsageError(
                f"what pip would install beside the items cannot be resolved: {found.closure_error}"
            )
        http = None if args.no_download else source.http
        named = [
            _fetched(i.local, i.file, i.info.sha256 if i.info else None, into, http) for i in found.items
        ]
        extra = [
            _fetched(None, a.wheel.candidate.file, a.facts.sha256 if a.facts else None, into, http)
            for a in found.added
        ]
    return named, named + extra, found.added


def _fetched(
    local: Path | None, file: IndexFile, read_sha256: str | None, into: Path, http: Http | None
) -> Path:
    """A wheel as a local file: a local one as it is, a remote one downloaded and checked against its
    sha256 (the index's, else the one its facts were read under)."""
    from abiprobe.probe.job_runner import fetch_wheel

    if local is not None:
        return local.absolute()
    sha = file.sha256 or read_sha256
    return fetch_wheel({"filename": file.filename, "url": file.url, "sha256": sha}, into, http)


def probe_options(args: argparse.Namespace, python: str | None) -> ProbeOptions:
    """The probe options ``abiprobe probe``'s flags ask for (a set on the command line or a ``--job``)."""
    return ProbeOptions(
        python=python,
        timeout=args.timeout,
        jobs=args.jobs,
        keep=args.keep,
        installer=args.installer,
        stub_driver=args.stub_driver,
        driver_version=driver_api_version(args.driver_version),
        smoke=not args.no_smoke,
        bytecode=not args.no_bytecode_cache,
        keep_layers=getattr(args, "keep_layers", False),
        layer_cache_bytes=layer_cache_bytes(getattr(args, "layer_cache_size", None)),
    )


def layer_cache_bytes(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        size = parse_size(text)
    except (ValueError, IndexError):
        size = -1
    if size < 0:
        raise UsageError(f"--layer-cache-size {text!r}: expected a size such as 20G, 500M or 0")
    return size
