"""``abiprobe solve``: the newest passing torch / kernel / flashinfer set for a target, and the matrix.

Exit codes: 0 a set was found, 1 none, 2 usage, 3 index trouble made the answer incomplete.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abiprobe.analyze.profiles import load_profile, profile_for
from abiprobe.commands.last_solve import LastSolve
from abiprobe.commands.options import add_index_options, add_target_options, target_of
from abiprobe.errors import UsageError
from abiprobe.index.client import IndexClient
from abiprobe.index.config import IndexConfig, load_index_config
from abiprobe.model.candidate import parse_upload_time
from abiprobe.model.stack import Stack, default_stack, load_stack_file
from abiprobe.model.target import Target
from abiprobe.net.http import Http, display_url
from abiprobe.report.jsondoc import json_text
from abiprobe.solve.ports import Progress, SolveReads, no_progress
from abiprobe.store.cache import Cache, default_cache_root
from abiprobe.store.primitives import write_text_atomic
from abiprobe.store.trust import ServedDirectories

if TYPE_CHECKING:  # the pipeline and the reports are imported while the indexes answer (see run)
    from abiprobe.solve.result import SolveResult
    from abiprobe.store.reads import WheelReads

# What each serves (checked against saved copies of the sglang and flashinfer pages): PyTorch's torch and
# the CUDA runtime wheels; sglang's kernels; flashinfer's cu130/ page the jit-cache shim and its
# per-architecture providers only, its top level flashinfer-python and flashinfer-cubin (not CUDA-specific).
CUDA_INDEXES = (
    "https://download.pytorch.org/whl/{tag}",
    "https://docs.sglang.ai/whl/{tag}",
    "https://flashinfer.ai/whl/{tag}",
    "https://flashinfer.ai/whl/",
)
DEFAULT_WINDOW = 3
# Index pages fetched this recently are used as they are (the max-age the default registry's simple
# pages carry); --refresh asks every index again.
PAGE_FRESH_FOR = 600.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("solve", help="find the newest wheel set that loads on a CUDA version and GPU")
    add_target_options(p)
    p.add_argument(
        "--with",
        dest="with_",
        action="append",
        default=[],
        metavar="REQ",
        help="add a package to the stack (name and optional bounds)",
    )
    p.add_argument(
        "--constraint",
        action="append",
        default=[],
        metavar="REQ",
        help="narrow a stack member, e.g. 'torch>=2.9'",
    )
    p.add_argument("--stack", type=Path, help="TOML stack file ([stack] members / with / constraints)")
    p.add_argument(
        "-r",
        "--requirement",
        action="append",
        default=None,
        metavar="FILE",
        help="requirements file or pylock.toml whose entries on stack members narrow them (markers for the "
        "target; others are left out)",
    )
    p.add_argument("--pre", action="store_true", help="consider pre-releases")
    p.add_argument(
        "--exclude-newer",
        metavar="WHEN",
        help="only stack wheels (roles, companions, providers) the index says were uploaded before WHEN "
        "(2026-03-01 or an RFC 3339 time); those without an upload time are left out",
    )
    p.add_argument("--all-versions", action="store_true", help="every version, not the newest few")
    p.add_argument("--window", type=int, default=DEFAULT_WINDOW, help="versions per package (default 3)")
    add_index_options(
        p, index_help="index to read (repeatable); replaces the default CUDA indexes and the default index"
    )
    p.add_argument(
        "--refresh",
        action="store_true",
        help=f"ask every index again (else pages of the last {PAGE_FRESH_FOR / 60:.0f} minutes are reused)",
    )
    p.add_argument(
        "--no-published-facts",
        action="store_true",
        help="read every wheel itself, fetching no published facts (also: ABIPROBE_PUBLISHED_FACTS=off)",
    )
    p.add_argument(
        "--verify-wheels",
        action="store_true",
        help="read every wheel whole and check its sha256, range-read facts re-read (what `cache publish` "
        "publishes; the nightly job)",
    )
    p.add_argument("--profile", type=Path, help="target system-library profile (JSON)")
    p.add_argument("--no-runtime", action="store_true", help="do not add the nvidia wheels torch pins")
    p.add_argument("--out-dir", type=Path, default=Path("matrices"), help="where matrix files go")
    p.add_argument("--lock", type=Path, help="lock file path (default: <out-dir>/<key>.lock.txt)")
    p.add_argument("--no-write", action="store_true", help="write no matrix or lock files")
    p.add_argument(
        "--probe",
        action="store_true",
        help="also import the probed cells (--probe-cells, default the chosen set) in throwaway venvs "
        "and fold the outcome into the matrix",
    )
    p.add_argument(
        "--wheels-dir",
        type=Path,
        metavar="DIR",
        help="where --probe keeps downloaded wheel files (default: a folder in the temp dir)",
    )
    p.add_argument("--json", action="store_true", help="print the matrix document as JSON")
    p.add_argument(
        "--emit-probe-jobs",
        type=Path,
        metavar="FILE",
        help="write probe jobs (set x GPU arch) for `probe --job` (docs/probe-jobs.md)",
    )
    p.add_argument(
        "--probe-arch",
        action="append",
        default=[],
        metavar="ARCH",
        help="GPU arch the probe jobs run on (repeatable; default: the target's)",
    )
    p.add_argument(
        "--probe-cells",
        choices=("chosen", "ok", "all"),
        default="chosen",
        help="which sets get probe jobs (default: the chosen one)",
    )
    p.set_defaults(func=run)


def matrix_name(target: Target) -> str:
    """``cu130-sm120-cp312-manylinux_2_28_x86_64``: the matrices/ file stem of a target."""
    arch = f"sm{target.arch.sm}{target.arch.variant}" if target.arch is not None else "nogpu"
    drv = "-drv" + ".".join(map(str, target.driver)) if target.driver else ""
    return f"cu{target.cuda[0]}{target.cuda[1]}-{arch}-{target.python_tag}-{target.platform}{drv}"


def build_stack(args: argparse.Namespace, target: Target | None = None) -> Stack:
    stack = load_stack_file(args.stack) if args.stack else default_stack()
    for req in args.with_:
        stack = stack.with_package(req)
    for req in args.constraint:
        stack = stack.with_constraint(req)
    files = getattr(args, "requirement", None) or []
    if files and target is not None:
        from packaging.requirements import Requirement

        from abiprobe.commands.user_items import stack_constraints

        for req in stack_constraints(files, target):
            if stack.role_of(Requirement(req).name) is not None:
                try:
                    stack = stack.with_constraint(req)
                except UsageError:
                    continue  # a companion: its core's pick decides it
    return stack


def exclude_newer(text: str | None) -> datetime | None:
    """``--exclude-newer``: a date (its start, UTC) or an RFC 3339 timestamp."""
    if text is None:
        return None
    when = parse_upload_time(text)
    if when is None:
        raise UsageError(f"--exclude-newer {text!r}: expected a date (2026-03-01) or an RFC 3339 time")
    return when


def index_urls(indexes: Sequence[str], target: Target) -> list[str]:
    """The CUDA indexes abiprobe reads before the installer's, unless ``--index`` replaces everything."""
    if indexes:
        return []
    tag = f"cu{target.cuda[0]}{target.cuda[1]}"
    return [u.format(tag=tag) for u in CUDA_INDEXES]


def index_config(
    target: Target,
    *,
    indexes: Sequence[str] = (),
    extra_indexes: Sequence[str] = (),
    strategy: str | None = None,
) -> IndexConfig:
    """``--index`` / ``--extra-index``, the CUDA indexes, then the user's installer configuration."""
    return load_index_config(
        cli_indexes=indexes,
        cli_extra_indexes=extra_indexes,
        cli_strategy=strategy,
        default_extras=index_urls(indexes, target),
        default_extras_origin=f"abiprobe's indexes for CUDA {target.cuda[0]}.{target.cuda[1]}",
    )


def solve_reads(client: IndexClient, wheels: WheelReads, progress: Progress = no_progress) -> SolveReads:
    """Every port a solve reads through, wired as this command wires them (a benchmark or a test that
    solves in process gets the same solve: a port left out changes what is read, and so the matrix)."""
    return SolveReads(
        client,
        wheels.info,
        store=wheels,
        metadata_for=wheels.metadata,
        runtime_facts_for=wheels.runtime_info,
        index_urls={s.label: display_url(s.url) for s in client.sources},
        variant_facts_for=wheels.variant_info,
        full_facts=wheels,
        progress=progress,
    )


def run(args: argparse.Namespace) -> int:
    """The edges wired once, the pipeline called once, then the files, the jobs and the summary made
    from its value."""
    if args.window < 1:
        raise UsageError("--window must be at least 1")
    target = target_of(args, base=Target.from_host())
    profile = load_profile(args.profile) if args.profile else profile_for(target.machine, target.glibc)
    stack = build_stack(args, target)
    name = matrix_name(target)
    config = index_config(
        target, indexes=args.index, extra_indexes=args.extra_index, strategy=args.index_strategy
    )
    options = config.filter_options(target, pre=args.pre, exclude_newer=exclude_newer(args.exclude_newer))
    cache = Cache(args.cache_dir or default_cache_root())
    probing = args.probe or args.emit_probe_jobs is not None
    with Http(progress=not args.json) as http:
        http.verify_wheels = args.verify_wheels
        client = IndexClient(
            config.sources,
            cache,
            http,
            offline=args.offline,
            strategy=config.strategy,
            pins=config.pins,
            fresh_for=0.0 if args.refresh else PAGE_FRESH_FOR,
            refresh=args.refresh,
        )
        # the pages the last solve of this stack on these indexes listed, asked about all at once (the
        # solve goes on meanwhile: a listing waits for its page), then the zip directories of the wheels
        # it had range-read facts of that the index now lists otherwise
        directories = ServedDirectories(http, cache)
        last = None if args.offline else LastSolve.recall(cache, config.sources, stack)
        asked = last.revalidate(client, directories) if last is not None else None
        try:
            from abiprobe.analyze.preloads import preload_pattern
            from abiprobe.solve.pipeline import solve
            from abiprobe.store.reads import WheelReads
            from abiprobe.ui.progress import wheel_work

            published = None
            if not args.offline:  # offline nothing is fetched, published facts neither
                from abiprobe.store.published_client import published_facts

                published = published_facts(http, cache, disabled=args.no_published_facts, offline=False)
            wheels = WheelReads(
                http,
                cache,
                offline=args.offline,
                published=published,
                listed_as_before=client.listed_as_before,
                directories=directories,
                preloaded=preload_pattern(stack.loading()),
                unread_sources=stack.unread_sources(),
            )
            reads = solve_reads(client, wheels, wheel_work)
            result = solve(
                stack,
                target,
                profile,
                reads,
                options,
                window=None if args.all_versions else args.window,
                runtime=not args.no_runtime,
                installs=args.probe_cells if probing else "chosen",
            )
        finally:  # nothing asked is left in flight when the client closes
            if asked is not None:
                asked.result()
            client.settle()
    from abiprobe.report.matrix_json import matrix_document
    from abiprobe.report.outputs import output_files

    if last is not None:
        last.remember(result.listed, result.range_read)
    doc = matrix_document(result)
    if args.probe:
        doc = probe_here(args, doc, result)
    if args.emit_probe_jobs:
        emit_probe_jobs(args, doc, result)
    if not args.no_write:
        files = output_files(
            args.out_dir,
            name,
            result,
            doc,
            lock_path=args.lock,
            find_links={display_url(s.url) for s in config.sources if s.kind == "find-links"},
            unchanged=holds,
        )
        for path, text in files.items():
            if not holds(path, text):
                write_text_atomic(path, text)
    if args.json:
        sys.stdout.write(json_text(doc))
    else:
        print_summary(args, result)
    if not result.complete:
        say_incomplete(args, result, name)
    return result.exit_code


def holds(path: Path, text: str) -> bool:
    """Whether the file at ``path`` holds ``text`` already: a warm solve that answers as the last one did
    rewrites and syncs none of its files."""
    data = text.encode("utf-8")
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def say_incomplete(args: argparse.Namespace, result: SolveResult, name: str) -> None:
    """The one error line of an incomplete answer, at every verbosity: what could not be read, by host."""
    from abiprobe import log
    from abiprobe.report.incomplete import incomplete_line

    fields = '"problems" and "indexes"' if result.problems else '"indexes"'
    where = f"{fields} in " + ("the --json output" if args.json else str(args.out_dir / f"{name}.json"))
    if args.no_write and not args.json:
        where = f"{fields} of `solve --json`"
    indexes = [i.url for i in result.indexes if not i.whole]
    others = max(0, len(result.problems) - len(result.unread))
    log.error(incomplete_line(result.unread, indexes, others, where))


def probe_here(args: argparse.Namespace, doc: dict[str, Any], result: SolveResult) -> dict[str, Any]:
    """Run the probe jobs of the selected cells on this host and merge their verdicts into the matrix."""
    import tempfile

    from abiprobe.probe import ProbeOptions
    from abiprobe.probe.job_runner import run_job
    from abiprobe.probe.jobs import merge_results, probe_jobs

    archs = args.probe_arch or ([] if result.matrix.target.arch else ["sm90"])
    jobs = probe_jobs(doc, result, archs=archs, cells=args.probe_cells)["include"]
    wheels_dir = args.wheels_dir or Path(tempfile.gettempdir()) / "abiprobe-job-wheels"
    python = f"{result.matrix.target.python[0]}.{result.matrix.target.python[1]}"
    results = [run_job(job, wheels_dir, ProbeOptions(python=python)) for job in jobs]
    merged, _report = merge_results(doc, results)
    return merged


def emit_probe_jobs(args: argparse.Namespace, doc: dict[str, Any], result: SolveResult) -> None:
    """``--emit-probe-jobs FILE [--probe-arch A]... [--probe-cells C]``: the job file, and how many."""
    from abiprobe.probe.jobs import probe_jobs

    jobs = probe_jobs(doc, result, archs=args.probe_arch, cells=args.probe_cells)
    write_text_atomic(args.emit_probe_jobs, json_text(jobs))
    if not args.json:
        print(f"  probe jobs: {len(jobs['include'])} written to {args.emit_probe_jobs}")


def print_summary(args: argparse.Namespace, result: SolveResult) -> None:
    from abiprobe.report.solve_text import render_summary
    from abiprobe.ui.console import print_all

    where = str(args.out_dir / f"{matrix_name(result.matrix.target)}.json") if not args.no_write else "--json"
    print_all(render_summary(result, where))
