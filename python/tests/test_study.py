"""examples/fashion_mnist end to end: the study's smoke regime with its
figures, a resumed run that is bit for bit the uninterrupted one, and the
script's errors."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "fashion_mnist"
sys.path.insert(0, str(EXAMPLE))

pytestmark = pytest.mark.skipif(not Path("/usr/share/datasets/fashion-mnist").exists(),
                                reason="dataset-fashion-mnist is not installed")


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_smoke_study(generated, tmp_path):
    out = tmp_path / "study"
    res = run_script(str(EXAMPLE / "study.py"), "--regimes", "smoke", "--out", str(out), "--generated", str(generated))
    assert res.returncode == 0, res.stderr
    summary = json.loads((out / "summary.json").read_text())["results"]["smoke"]
    assert set(summary) == {"dp_adam", "fiber"}
    for opt, cells in summary.items():
        cell = cells["2"]
        assert len(cell["test_acc"]) == 2 and not any(cell["diverged"])  # seeds 1 and 2
        assert min(cell["test_acc"]) > 0.3, f"{opt} is no better than chance (0.1) by a margin: {cell}"
        assert (cell["clamp_mass"] is None) == (opt == "dp_adam")
    att = json.loads((out / "attenuation.json").read_text())
    # The kernel's noise differs between the replicas by 2σ_w² per coordinate, white over the steps,
    # so the filter passes A(ω) of it.
    steps = att["steps"]
    assert abs(sum(s["noise_ratio"] for s in steps) / len(steps) - 1) < 0.1
    assert abs(sum(s["rho"] for s in steps) / len(steps) - steps[-1]["steady"]) < 0.05
    res = run_script(str(EXAMPLE / "plot.py"), "--out", str(out))
    assert res.returncode == 0, res.stderr
    for png in ("accuracy_smoke", "curves_smoke", "clamp_mass_smoke", "attenuation"):
        assert (out / f"{png}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| FiBeR |" in (out / "tables.md").read_text()


@pytest.mark.parametrize("model", ["float32", "bfloat16", "per_layer"])
def test_resumed_run_is_the_same_run(model, generated, tmp_path):
    """A run resumed from its checkpoint is the run, bit for bit; for a
    bfloat16 model too, its parameters rounded stochastically (fiber_bf16
    compiled for them), and clipped per layer with proportional noise (the
    checkpoint keeps the clip groups)."""
    import train
    opt, bf16 = {"float32": (str(generated / "fiber"), {}),
                 "bfloat16": ("fiber_bf16", {"dtype": "bfloat16", "param_rounding": "stochastic"}),
                 "per_layer": (str(generated / "fiber"), {"clipping": "layer_proportional"})}[model]
    cfg = train.Config(optimizer=opt, epsilon=2, epochs=1, batch=128, lr=1e-4, noise_seed=7,
                       train_subset=3000, evals_per_epoch=2, **bf16)
    splits = train.load_splits(cfg.train_subset)
    whole = train.run(cfg, tmp_path / "whole.json", splits)
    # A run killed after its first evaluation leaves its checkpoint; started again, it resumes.
    r = train.Run(cfg, splits)
    first = min(r.evals())
    while r.step < first:
        r.advance()
    r.evaluate()
    train.save_checkpoint(r, tmp_path / "resumed.json.ckpt")
    assert (tmp_path / "resumed.json.ckpt").stat().st_mode & 0o777 == 0o600  # it holds the noise seed
    resumed = train.run(cfg, tmp_path / "resumed.json", splits)
    assert not (tmp_path / "resumed.json.ckpt").exists()
    strip = lambda res: {k: v for k, v in res.items() if k != "wall_s"}  # noqa: E731
    assert strip(resumed) == strip(whole)


def test_train_rejects_bad_flags(generated, tmp_path):
    res = run_script(str(EXAMPLE / "train.py"), "--optimizer", str(generated / "fiber"), "--hyper", "omega")
    assert res.returncode != 0 and "--hyper 'omega': want name=value" in res.stderr
    res = run_script(str(EXAMPLE / "train.py"), "--optimizer", str(generated / "fiber"), "--hyper", "nope=1")
    assert res.returncode == 1 and "has no hyper nope" in res.stderr
    res = run_script(str(EXAMPLE / "study.py"), "--regimes", "big", "--out", str(tmp_path))
    assert res.returncode == 2 and "--regimes: no regime big" in res.stderr
    res = run_script(str(EXAMPLE / "study.py"), "--regimes", "smoke", "--out", str(tmp_path), "--generated",
                     str(generated), "--also", str(tmp_path / "mine"))
    assert res.returncode == 2 and f"--also: no directory {tmp_path / 'mine'}" in res.stderr
    assert not (tmp_path / "runs").exists()


def test_checkpoint_of_another_run_is_refused(generated, tmp_path):
    import train
    cfg = train.Config(optimizer=str(generated / "dp_adam"), epochs=1, batch=128, noise_seed=1, train_subset=1000)
    splits = train.load_splits(cfg.train_subset)
    train.save_checkpoint(train.Run(cfg, splits), tmp_path / "r.json.ckpt")
    other = dataclasses.replace(cfg, lr=2e-3)
    with pytest.raises(SystemExit, match="the checkpoint is of another run"):
        train.run(other, tmp_path / "r.json", splits)
    assert torch.load(tmp_path / "r.json.ckpt")["config"]["lr"] == cfg.lr  # left as it was


def test_cosine_factor_is_fiber_cosines_schedule():
    """The warmup + cosine factor the cosine regime sets per step: from
    lr/W·(…) up to lr at the end of the warmup, down to lr/100 at the last
    step, as optimizers/fiber_cosine.dsl's lr_t with lr_min = lr/100."""
    import train
    steps, w = 280, 28  # warmup 0.1 of 280 steps
    assert train.cosine_factor(0, steps, 0.1) == pytest.approx(0.01 + 0.99 / w)
    assert train.cosine_factor(w - 1, steps, 0.1) == pytest.approx(1.0)
    assert train.cosine_factor(steps - 1, steps, 0.1) == pytest.approx(0.01)
    mid = (w + steps) // 2 - 1  # p = 1/2: halfway down
    assert train.cosine_factor(mid, steps, 0.1) == pytest.approx(0.01 + 0.99 / 2)


def test_layer_clipping_keeps_the_sensitivity():
    """Per-layer clipping: a group a layer (weight and bias), norms
    C·√(d_l/d) whose combined sensitivity √Σ C_l² is C; flat is one group."""
    import train
    model = train.cnn()
    groups, clips = train.layer_clipping(model, 2.0, "layer")
    assert [sum(p.numel() for p in g["params"]) for g in groups] == [208, 3216, 2570]
    assert sum(c * c for c in clips) == pytest.approx(4.0, rel=1e-12)
    flat, clip = train.layer_clipping(model, 2.0, "flat")
    assert len(flat) == 1 and clip == 2.0
    with pytest.raises(ValueError, match="want flat, layer or layer_proportional"):
        train.layer_clipping(model, 2.0, "tensor")
