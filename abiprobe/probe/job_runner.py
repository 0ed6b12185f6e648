"""Run one probe job on this host: fetch its wheels (sha256-checked), probe them, give the result document."""

from __future__ import annotations

import hashlib
import platform
import sys
from pathlib import Path
from typing import Any

from abiprobe.binary.wheel import hash_file as sha256_of_file
from abiprobe.errors import HashMismatchError, UsageError
from abiprobe.model.verdict import STATUSES
from abiprobe.net.http import Http
from abiprobe.probe import ProbeOptions, ProbeResult, ProbeSet, probe_sets
from abiprobe.probe.jobs import result_document
from abiprobe.ui import interrupt


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

    with interrupt.removed_on_stop(part):
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
