"""`abiprobe probe WHEEL...`: install one exact set of local wheels in a throwaway venv and import it."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import types
from pathlib import Path
from typing import Any

from abiprobe.errors import UsageError
from abiprobe.probe import PROBE_SCHEMA_VERSION, ProbeOptions, ProbeResult, ProbeSet, probe_sets
from abiprobe.probe.parallel import wheel_tops


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "probe",
        help="install an exact set of wheels in a throwaway venv and import it for real",
        description="Installs the WHEEL files (offline, no dependency resolution) into a throwaway venv "
        "and imports their packages in order, in a clean subprocess. On hosts without a CUDA driver a "
        "stub libcuda.so.1 stands in for it; with a GPU a smoke test runs one kernel.",
    )
    p.add_argument("wheels", nargs="*", type=Path, metavar="WHEEL")
    p.add_argument(
        "--installed",
        action="store_true",
        help="probe the environment of --python as it is (WHEELs, if any, are tried on top of it)",
    )
    p.add_argument("--python", help="target Python: a version (3.12) or an interpreter path")
    p.add_argument(
        "--import-order",
        help="comma-separated modules to import, in order (default: the wheels' packages, in argument order)",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="seconds allowed per set (default 120)")
    p.add_argument("--jobs", type=int, help="probes run at once (default: from CPUs and free disk)")
    p.add_argument("--keep", action="store_true", help="keep the venvs and logs; print where they are")
    p.add_argument("--installer", choices=("auto", "uv", "pip"), default="auto")
    p.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile every layer's Python modules afresh instead of reusing bytecode saved by earlier runs",
    )
    p.add_argument("--stub-driver", choices=("auto", "always", "never"), default="auto")
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


def parse_driver_version(text: str) -> int:
    """``13.0`` -> 13000, ``12.8`` -> 12080 (the encoding cuDriverGetVersion uses); an int passes through."""
    head, _, tail = text.strip().partition(".")
    try:
        if not tail and int(head) >= 1000:
            return int(head)
        return int(head) * 1000 + int(tail or 0) * 10
    except ValueError:
        raise UsageError(f"--driver-version {text!r}: expected MAJOR.MINOR such as 13.0") from None


def default_import_order(wheels: list[Path]) -> tuple[str, ...]:
    order: list[str] = []
    for w in wheels:
        for top in wheel_tops(w):
            if top not in order:
                order.append(top)
    return tuple(order)


def _on_sigterm(signum: int, frame: types.FrameType | None) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    if args.job is not None:
        from abiprobe.jobs_run import run_job_command

        return run_job_command(args)
    if not args.wheels and not args.installed:
        raise UsageError("give WHEEL files, --installed to probe an existing environment, or --job FILE")
    wheels = [w.absolute() for w in args.wheels]
    for w in wheels:
        if not w.is_file():
            raise UsageError(f"{w} does not exist")
    if args.import_order:
        order = tuple(m.strip() for m in args.import_order.split(",") if m.strip())
    else:
        order = default_import_order(wheels)
    if not order:
        raise UsageError("nothing to import: pass --import-order")
    options = probe_options(args, args.python)
    label = " + ".join(w.name for w in wheels)
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        if args.installed:
            from abiprobe.probe.environment import probe_environment

            results = [probe_environment(args.python or sys.executable, order, options, wheels)]
        else:
            results = probe_sets([ProbeSet(tuple(wheels), order, label, expected=args.expect)], options)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.json:
        doc = {"schema_version": PROBE_SCHEMA_VERSION, "results": [r.to_json() for r in results]}
        json.dump(doc, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        for r in results:
            render(r)
    return 0 if all(r.outcome == "ok" and not r.disagrees for r in results) else 1


def render(result: ProbeResult) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    style = "green" if result.outcome == "ok" else "red"
    if result.disagrees:
        console.print(f"[bold white on red] DISAGREEMENT [/] static verdict said {result.expected!r}")
    console.print(f"[bold {style}]{result.outcome}[/] {result.label}")
    console.print(f"  {result.explanation()}")
    table = Table(show_header=True, header_style="bold", box=None)
    table.add_column("distribution")
    table.add_column("version imported")
    for name, version in result.versions:
        table.add_row(name, version or "-")
    console.print(table)
    facts: dict[str, Any] = {
        "python": result.python,
        "installer": result.installer,
        "mode": result.mode,
        "driver": "stubbed (no CUDA driver on this host)" if result.stubbed else "real or not needed",
        "seconds": f"{result.duration:.2f}",
    }
    for key, value in facts.items():
        console.print(f"  {key}: {value}")
    if result.loaded:
        console.print("  loaded: " + ", ".join(result.loaded))
    if result.smoke:
        console.print(f"  smoke: {json.dumps(result.smoke, sort_keys=True)}")
    if result.temp_root:
        console.print(f"  kept: {result.temp_root}")


def probe_options(args: argparse.Namespace, python: str | None) -> ProbeOptions:
    """The probe options ``abiprobe probe``'s flags ask for (a set on the command line or a ``--job``)."""
    return ProbeOptions(
        python=python,
        timeout=args.timeout,
        jobs=args.jobs,
        keep=args.keep,
        installer=args.installer,
        stub_driver=args.stub_driver,
        driver_version=parse_driver_version(args.driver_version),
        smoke=not args.no_smoke,
        bytecode=not args.no_bytecode_cache,
    )
