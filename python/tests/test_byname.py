"""Optimizers by name or by file: ``ft.Optimizer(params, "dp_adamw")``
compiles a shipped optimizer once into the per-user cache
($FIBERGEN_CACHE), from any directory, and steps exactly as the directory
fibergen build wrote; a .dsl file of one's own too, with its warnings and
errors; processes racing on an empty cache both get it."""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import fibergen.torch as ft
from fibergen import FibergenError, _lib

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache, and a working directory with no optimizer in it."""
    monkeypatch.setenv("FIBERGEN_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path / "cache"


def stepped(optimizer, steps: int = 3) -> np.ndarray:
    """The parameters' bits after steps of made-up clipped means."""
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(1000))
    opt = ft.Optimizer([p], optimizer, seed=5, weight_decay=0.01)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=16)
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        p.grad = 0.1 * torch.randn(1000, generator=g)
        opt.trust_clipped_grad()
        opt.step()
    return p.detach().numpy().view(np.uint32).copy()


def test_by_name_is_the_built_directory(cache: Path, generated: Path):
    first = _lib.resolve("dp_adamw")
    assert first["built"] and Path(first["dir"]).name == "dp_adamw" and Path(first["dir"]).is_relative_to(cache)
    assert _lib.resolve("dp_adamw") == {**first, "built": False}
    np.testing.assert_array_equal(stepped("dp_adamw"), stepped(generated / "dp_adamw"))


def test_own_file_warns_and_changes_rebuild(cache: Path):
    src = "optimizer mine\nhyper lr = 0.1\nhyper b = 2\nstep {\n theta = theta - lr * g\n}\n"
    Path("mine.dsl").write_text(src)
    p = torch.nn.Parameter(torch.zeros(4))
    with pytest.warns(UserWarning, match=r"(?s)mine.dsl:3:7: warning: hyper b is never used.*\^"):
        opt = ft.Optimizer([p], "mine.dsl")
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)
    Path("mine.dsl").write_text(src.replace("0.1", "0.25"))
    with pytest.warns(UserWarning):
        assert ft.Optimizer([p], Path("mine.dsl")).param_groups[0]["lr"] == pytest.approx(0.25)


@pytest.mark.parametrize("spec, message", [
    ("dp_adamx", r"no file dp_adamx \(relative to .*\), and fibergen ships no optimizer of that name \(abtrack, "),
    ("bad.dsl", r"bad.dsl:3:10: undefined: y\n\t theta = y\n\t         \^"),
    ("missing.dsl", r"no directory or file missing.dsl \(relative to .*\): give a directory fibergen build wrote"),
    ("empty", r"empty has no empty.json: give a directory fibergen build wrote"),
])
def test_errors_speak_plainly(cache: Path, spec: str, message: str):
    Path("bad.dsl").write_text("optimizer bad\nstep {\n theta = y\n}\n")
    Path("empty").mkdir()
    with pytest.raises(FibergenError, match=message):
        ft.Optimizer([torch.nn.Parameter(torch.zeros(4))], spec)


def _open_by_name(cache: str, queue) -> None:
    os.environ["FIBERGEN_CACHE"] = cache
    sys.path.insert(0, str(ROOT / "python"))
    import fibergen.torch as ft  # noqa: F811 (a fresh process)
    try:
        opt = ft.Optimizer([torch.nn.Parameter(torch.zeros(8))], "dp_sgd")
        queue.put(str(opt._path))
    except Exception as e:  # reported to the parent, which fails
        queue.put(f"error: {e}")


def test_processes_race_on_an_empty_cache(cache: Path):
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_open_by_name, args=(str(cache), queue)) for _ in range(3)]
    for p in procs:
        p.start()
    dirs = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert len(set(dirs)) == 1 and not dirs[0].startswith("error"), dirs
    assert not [p for p in (cache / "opt").iterdir() if p.name.startswith(".")], "temporary directories left"
