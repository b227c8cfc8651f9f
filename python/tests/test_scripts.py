"""The benchmark scripts under scripts/ run end to end on a tiny n, so that
they do not rot between the sessions that record their numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SCRIPTS = ROOT / "scripts"


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("secure", [False, True])
def test_bench_torch_cpu(generated: Path, secure: bool) -> None:
    out = run([str(SCRIPTS / "bench_torch_cpu.py"), "--optimizers", "dp_sgd,fiber", "--n", "4K",
               "--threads", "1", "--steps", "2", "--json"] + ["--secure"] * secure,
              env={"FIBERGEN_GENERATED": str(generated), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["n"] == 4096 and r["threads"] == 1 and r["secure"] == secure
    for name in ("dp_sgd", "fiber"):
        x = r["optimizers"][name]
        assert x["fibergen_ms"] > 0 and x["torch_ms"] > 0
        assert x["ratio"] == x["torch_ms"] / x["fibergen_ms"]
        assert x["host_kernel"].startswith(f"{name}_cpu")


def test_bench_torch_cpu_bfloat16(generated: Path) -> None:
    """--dtype bfloat16: dp_adamw_bf16 compiled for bfloat16 parameters (into
    the cache) against torch's AdamW on a bfloat16 model."""
    out = run([str(SCRIPTS / "bench_torch_cpu.py"), "--optimizers", "dp_adamw", "--n", "4K", "--threads", "1",
               "--steps", "2", "--dtype", "bfloat16", "--json"],
              env={"FIBERGEN_GENERATED": str(generated), "FIBERGEN_CACHE": os.environ["FIBERGEN_CACHE"],
                   "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    x = r["optimizers"]["dp_adamw"]
    assert r["dtype"] == "bfloat16" and x["fibergen_ms"] > 0 and x["torch_ms"] > 0
    assert x["host_kernel"].startswith("dp_adamw_bf16_cpu")


def test_bench_torch_cpu_without_torch() -> None:
    # As if PyTorch were not installed: `import torch` fails.
    code = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = ['bench_torch_cpu.py']; "
            f"runpy.run_path({str(SCRIPTS / 'bench_torch_cpu.py')!r}, run_name='__main__')")
    out = run(["-c", code])
    assert out.returncode == 0 and out.stdout == ""
    assert "skipped: PyTorch is not installed" in out.stderr


def test_bench_torch_cpu_unknown_optimizer() -> None:
    out = run([str(SCRIPTS / "bench_torch_cpu.py"), "--optimizers", "disk"])
    assert out.returncode == 2 and "no PyTorch peer for disk" in out.stderr


def test_bench_scaling(fibergen_bin: Path, generated: Path, tmp_path: Path) -> None:
    plot = tmp_path / "scaling.png"
    out = run([str(SCRIPTS / "bench_scaling.py"), "--fibergen", str(fibergen_bin), "--generated", str(generated),
               "--optimizers", "dp_sgd,fiber", "--n", "4K,8K", "--threads", "1,2", "--steps", "1", "--plot", str(plot)])
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| dp_sgd") or line.startswith("| fiber")]
    assert len(rows) == 8  # 2 optimizers × 2 sizes × 2 thread counts
    assert plot.stat().st_size > 0


def test_bench_budget(generated: Path) -> None:
    out = run([str(SCRIPTS / "bench_budget.py"), "--steps", "3", "--batch", "4"],
              env={"FIBERGEN_GENERATED": str(generated), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].endswith("3 steps of 4") and len(lines) == 4
    assert all("ms/step" in line for line in lines[1:])


def test_bench_step_small(generated: Path) -> None:
    out = run([str(SCRIPTS / "bench_step_small.py"), "--sizes", "100,1K", "--batch", "3", "--threads", "1",
               "--reps", "2", "--json"], env={"FIBERGEN_GENERATED": str(generated), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert (r["batch"], r["threads"], r["reps"]) == (3, 1, 2)
    assert [(x["optimizer"], x["n"]) for x in r["rows"]] == [
        ("dp_adamw", 100), ("fiber", 100), ("dp_adamw", 1000), ("fiber", 1000)]
    for x in r["rows"]:
        assert x["fibergen_ms"] > 0 and x["torch_ms"] > 0 and x["ratio"] == x["fibergen_ms"] / x["torch_ms"]


def test_bench_step_small_refuses_bad_sizes() -> None:
    out = run([str(SCRIPTS / "bench_step_small.py"), "--sizes", "10K,lots"])
    assert out.returncode == 2 and "--sizes" in out.stderr


def test_bench_step_small_paths(generated: Path) -> None:
    out = run([str(SCRIPTS / "bench_step_small.py"), "--paths", "--optimizers", "dp_adamw", "--sizes", "100",
               "--batch", "3", "--threads", "1", "--reps", "2", "--json"],
              env={"FIBERGEN_GENERATED": str(generated), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    r = json.loads(out.stdout)
    assert r["n"] == 100 and sorted(r["paths"]) == sorted(
        f"dp_adamw, {g}, {s}: {p}" for g in ("1 group", "2 groups") for s in ("set_dp", "set_budget")
        for p in ("privatize + step", "trust + step"))
    assert all(v > 0 for v in r["paths"].values())
