"""fg_info reports the host kernel's instruction-set variant and why
(issue 32); FIBERGEN_HOST_ISA forces one the CPU runs, and a wrong value
is a clear error, raised as the optimizer opens, before any kernel runs."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# One step of dp_sgd on the CPU, then fg_info's host_kernel and host_isa
# (or the error) as JSON: run in a process of its own, whose
# environment the runtime reads once.
STEP = """
import json, sys
sys.path.insert(0, {python!r})
import torch, fibergen.torch as ft
p = torch.nn.Parameter(torch.ones(10))
try:
    opt = ft.Optimizer([p], {build!r}, seed=1)
    opt.set_noise(0.0, draw=False)
    p.grad = torch.full((10,), 0.5)
    opt.step()
except ft.FibergenError as e:
    print(json.dumps({{"error": str(e)}}))
else:
    info = opt._groups[0].handle.info()
    print(json.dumps({{"host_kernel": info["host_kernel"], "host_isa": info["host_isa"]}}))
"""


def step_with(generated: Path, isa: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "FIBERGEN_HOST_ISA"}
    if isa is not None:
        env["FIBERGEN_HOST_ISA"] = isa
    code = STEP.format(python=str(ROOT / "python"), build=str(generated / "dp_sgd"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def suffix(isa: str) -> str:
    return "" if isa == "generic" else "_" + isa


def test_info_says_which_variant_runs_and_why(generated):
    x = step_with(generated, None)
    choice = x["host_isa"]
    assert x["host_kernel"] == "dp_sgd_cpu" + suffix(choice["chosen"])
    chosen = [v for v in choice["variants"] if v["chosen"]]
    assert [v["name"] for v in chosen] == [choice["chosen"]] and "reason" not in chosen[0]
    for v in choice["variants"]:
        assert v["chosen"] or v["reason"], v
    if platform.machine() == "x86_64":
        assert [v["name"] for v in choice["variants"]] == ["avx512", "avx2", "generic"]


def test_a_forced_variant_runs(generated):
    x = step_with(generated, "generic")
    assert x["host_kernel"] == "dp_sgd_cpu"
    generic = x["host_isa"]["variants"][-1]
    assert generic == {"name": "generic", "chosen": True, "reason": "FIBERGEN_HOST_ISA=generic"}


@pytest.mark.parametrize("isa", ["sse9", "AVX2", ""])
def test_an_unknown_variant_is_refused(generated, isa):
    x = step_with(generated, isa)
    if isa == "":  # unset and empty are alike: the runtime chooses
        assert x["host_isa"]["chosen"]
        return
    assert f"FIBERGEN_HOST_ISA={isa} is not a variant: want generic, avx2 or avx512" in x["error"], x
