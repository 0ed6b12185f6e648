"""Run one probe job on this host: fetch its wheels (sha256-checked), probe them, write the result file."""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

from abiprobe.cache_io import write_text_atomic
from abiprobe.errors import HashMismatchError, UsageError
from abiprobe.http import Http
from abiprobe.jobs import load_jobs, result_document, select_job
from abiprobe.localstate import hash_file as sha256_of_file
from abiprobe.probe import ProbeOptions, ProbeResult, ProbeSet, probe_sets
from abiprobe.verdict import STATUSES


def fetch_wheel(wheel: dict[str, Any], into: Path, http: Http | None) -> Path:
    """The job's wheel as a local file: reused from ``into`` when its sha256 matches, else downloaded."""
    into.mkdir(parents=True, exist_ok=True)
    dest: Path = into / str(wheel["filename"])
    want = wheel.get("sha256")
    if dest.is_file() and (want is None or sha256_of_file(dest) == want):
        return dest
    if http is None:
        raise UsageError(f"{wheel['filename']} is not in {into} and downloads are off")
    part = dest.with_name(dest.name + ".part")

    def once() -> str:
        digest = hashlib.sha256()
        with http.stream(wheel["url"]) as response, part.open("wb") as fh:
            if response.status_code != 200:
                raise UsageError(f"{wheel['url']}: HTTP {response.status_code}")
            for chunk in http.iter_chunks(response):
                digest.update(chunk)
                fh.write(chunk)
        return digest.hexdigest()

    got = http.with_retries(wheel["url"], once)
    if want is not None and got != want:
        part.unlink(missing_ok=True)
        raise HashMismatchError(f"{wheel['filename']}: sha256 {got}, the job says {want}")
    part.replace(dest)
    return dest


def host_facts() -> dict[str, Any]:
    return {"hostname": platform.node(), "machine": platform.machine(), "python": sys.version.split()[0]}


def run_job(
    job: dict[str, Any], wheels_dir: Path, options: ProbeOptions, *, download: bool = True
) -> dict[str, Any]:
    """Fetch and probe one job; the result document ``matrix merge`` reads."""
    with Http() as http:
        wheels = [fetch_wheel(w, wheels_dir, http if download else None) for w in job["wheels"]]
    probe = ProbeSet(
        tuple(wheels),
        tuple(job["import_order"]),
        job["id"],
        expected=_status(job["expected"]),
        expected_gpu=_status(job.get("expected_gpu")),
        expected_message=job.get("expected_message")
        if isinstance(job.get("expected_message"), str)
        else None,
    )
    (result,) = probe_sets([probe], options)
    return result_document(job, result.to_json(), result.to_verdicts(), {**host_facts(), **_gpu(result)})


def _status(value: Any) -> Any:
    return value if value in STATUSES else None


def _gpu(result: ProbeResult) -> dict[str, Any]:
    cap = result.smoke.get("capability")
    return {"gpu_capability": cap, "driver_stubbed": result.stubbed}


def run_job_command(args: argparse.Namespace) -> int:
    """``abiprobe probe --job FILE [--job-id ID]``: exit 0 when the set imports and agrees with the matrix."""
    from abiprobe.commands.probe import probe_options

    job = select_job(load_jobs(args.job), args.job_id)
    wheels_dir = args.wheels_dir or Path(tempfile.gettempdir()) / "abiprobe-job-wheels"
    opts = probe_options(args, args.python or job["python"])
    doc = run_job(job, wheels_dir, opts, download=not args.no_download)
    text = json.dumps(doc, indent=1) + "\n"
    if args.result is not None:
        write_text_atomic(args.result, text)
    if args.json or args.result is None:
        sys.stdout.write(text)
    else:
        print(f"{job['id']}: {doc['result']['explanation']} -> {args.result}")
    res = doc["result"]
    return 0 if res["outcome"] == "ok" and not res["disagrees"] else 1
