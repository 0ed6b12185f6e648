"""Stored facts name the read rules they were read under: a stack file whose rules differ from the built-in
stack's (which packages' Python sources a read leaves out) gets entries of its own, and the built-in
stack's entries, named by the sha256 alone, are neither replaced nor taken for its answers."""

from __future__ import annotations

import json
from pathlib import Path

from support.indexserver import IndexServer
from support.solve_stacks import serve, solve_argv, solve_stack

from abiprobe.cli import main
from abiprobe.model.stack import TORCH_LOADING, default_stack
from abiprobe.store.cache import Cache
from abiprobe.store.reads import read_rules_key

# torch's loading as built in, but its sources read (the built-in stack leaves them out)
TORCH = TORCH_LOADING
STACK_TOML = f"""
[[stack.members]]
role = "torch"
names = ["torch"]

[[stack.members.loading]]
package = "torch"
read_source = true
preload = {json.dumps(list(TORCH.preload))}
preload_closure = {json.dumps(list(TORCH.preload_closure))}
closure_dir = "{TORCH.closure_dir}"

[[stack.members]]
role = "kernel"
names = ["sglang-kernel"]
"""


def _entries(cache: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((cache / "facts").rglob("*.gz"))}


def _modules(cache: Path, sha256: str, rules: str) -> set[str]:
    facts = Cache(cache).load_facts(sha256, allow_partial=True, allow_unverified=True, rules=rules)
    assert facts is not None, f"no facts of {sha256} under rules {rules!r}"
    return {m.name for m in facts.python or ()}


def test_a_stack_file_whose_read_rules_differ_gets_its_own_facts_entries(tmp_path: Path) -> None:
    # GIVEN the fixture stack on the local index, solved once with the built-in stack
    stack = solve_stack(tmp_path / "stack")
    stack_file = tmp_path / "stack.toml"
    stack_file.write_text(STACK_TOML)
    cache = tmp_path / "cache"
    with IndexServer() as server:
        served = serve(server, stack)
        assert main(solve_argv(server.index_url, cache, tmp_path / "m1")) == 0
        built_in = _entries(cache)
        # WHEN it is solved with a stack file that reads torch's Python sources
        assert main(solve_argv(server.index_url, cache, tmp_path / "m2", "--stack", str(stack_file))) == 0
    after = _entries(cache)
    torch = served["torch_29"].sha256  # type: ignore[attr-defined]
    rules = read_rules_key(frozenset())
    # THEN the built-in stack's entries are all still there, byte for byte, named by the sha256 alone
    assert read_rules_key(default_stack().unread_sources()) == ""
    assert {k: after[k] for k in built_in} == built_in
    assert f"{torch}.facts.gz" in built_in
    # AND torch's wheel got an entry of its own, named by its sha256 and the rules, holding its sources
    assert len(rules) == 16
    assert f"{torch}.{rules}.facts.gz" in after
    assert "torch" in _modules(cache, torch, rules)
    assert "torch" not in _modules(cache, torch, "")
    # AND the cache's own check takes the entries of both as sound
    assert main(["cache", "verify", "--cache-dir", str(cache)]) == 0
