"""Per-group clipping (set_dp with a clip norm per parameter group): bit
for bit `fibergen run --clip-groups`, the noise shared equally or in
proportion to each group's norm; the scales' (G, k) shape; budgets and
checkpoints keep the groups; bad settings are refused."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

import fibergen.torch as ft
from fibergen import FibergenError
from test_exact import SEED, SHAPES, TENSORS, fibergen_run, make_params

CLIPS = [0.3, 1.0]  # group 0: SHAPES[:2], group 1: SHAPES[2:]
BATCH, STEPS, SIGMA = 6, 20, 0.8
N = sum(int(np.prod(s)) for s in SHAPES)


def groups(params: list[torch.nn.Parameter], **hypers: float) -> list[dict]:
    return [{"params": params[:2], **hypers}, {"params": params[2:]}]


def sizes(params: list[torch.nn.Parameter]) -> list[int]:
    return [sum(p.numel() for p in g["params"]) for g in groups(params)]


def split(rows: np.ndarray, params: list[torch.nn.Parameter]) -> list[torch.Tensor]:
    cuts = np.cumsum([p.numel() for p in params])[:-1]
    return [torch.from_numpy(x.copy()).reshape(len(rows), *p.shape) for x, p in zip(np.split(rows, cuts, axis=1), params)]


@pytest.mark.parametrize("name", ["dp_adamw", "disk", "lamb"])
@pytest.mark.parametrize("proportional", [False, True])
def test_groups_match_fibergen_run(name, proportional, generated, fibergen_bin, tmp_path):
    rng = np.random.default_rng(3)
    theta = rng.normal(0, 1, N).astype(np.float32)
    cur = rng.normal(0, 0.3, (STEPS, BATCH, N)).astype(np.float32)
    look = rng.normal(0, 0.3, (STEPS, BATCH, N)).astype(np.float32)
    for f, a in (("theta", theta), ("cur", cur), ("look", look)):
        np.save(tmp_path / f"{f}.npy", a)
    params = make_params(theta)
    opt = ft.Optimizer(groups(params), generated / name, seed=SEED)
    two_point = opt.observation()["kind"] == "two_point"
    clip_groups = ",".join(f"{s}:{c!r}" for s, c in zip(sizes(params), CLIPS))
    args = ["--example-grads", str(tmp_path / "cur.npy"), "--clip-groups", clip_groups,
            "--noise-multiplier", repr(SIGMA), "--tensors", TENSORS]
    args += ["--proportional-noise"] * proportional + ["--lookahead-grads", str(tmp_path / "look.npy")] * two_point
    want = fibergen_run(fibergen_bin, Path(__file__).resolve().parents[2] / "optimizers" / f"{name}.dsl",
                        tmp_path, "cpu", *args)

    opt.set_dp(CLIPS, SIGMA, BATCH, proportional_noise=proportional)
    for t in range(STEPS):
        scales, clipped = opt.privatize(split(cur[t], params), split(look[t], params) if two_point else None)
        assert tuple(scales.shape) == (2, BATCH) and 0 < clipped <= BATCH
        opt.step()
    got = torch.cat([p.detach().reshape(-1) for p in params]).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_each_group_clipped_to_its_norm(generated):
    """The clipped mean of one example is, group by group, the example
    scaled to at most its group's norm, and the scales say by how much."""
    params = make_params(np.zeros(N, np.float32))
    opt = ft.Optimizer(groups(params), generated / "dp_sgd", seed=SEED)
    with pytest.warns(RuntimeWarning, match="no DP noise"):
        opt.set_dp(CLIPS, 0.0, 1)
    ex = [torch.full((1, *p.shape), 0.5) for p in params]
    scales, clipped = opt.privatize(ex)
    flat = torch.cat([p.grad.reshape(-1) for p in params])
    lo = 0
    for g, (size, clip) in enumerate(zip(sizes(params), CLIPS)):
        norm = 0.5 * math.sqrt(size)
        want = min(1.0, clip / norm)
        assert scales[g, 0].item() == pytest.approx(want, rel=1e-6)
        assert torch.linalg.vector_norm(flat[lo:lo + size]).item() == pytest.approx(min(norm, clip), rel=1e-5)
        lo += size
    assert clipped == 1
    norms = torch.tensor([[0.1, 0.6], [2.0, 0.5]], dtype=torch.float64)
    assert opt.clip_scales(norms).tolist() == [[1.0, 0.5], [0.5, 1.0]]


def test_noise_follows_the_groups(generated):
    """σ_w² is (σ·√Σ C_g²/B)², or per group (σ·√G·C_g/B)² with proportional
    noise; a budget with groups calibrates the same σ as one with one norm."""
    params = make_params(np.zeros(N, np.float32))
    opt = ft.Optimizer(groups(params), generated / "dp_sgd", seed=SEED)
    opt.set_dp(CLIPS, 2.0, 4)
    assert opt.sigma_w2 == pytest.approx((2.0 * math.sqrt(0.09 + 1.0) / 4) ** 2, rel=1e-12)
    opt.set_dp(CLIPS, 2.0, 4, proportional_noise=True)
    info = opt._handle.info()["dp"]["clip_groups"]
    assert [g["sigma_w2"] for g in info] == pytest.approx([(2.0 * math.sqrt(2) * c / 4) ** 2 for c in CLIPS], rel=1e-12)
    budget = dict(dataset_size=60000, batch_size=256, epochs=1.0)
    other = ft.Optimizer(make_params(np.zeros(N, np.float32)), generated / "dp_sgd", seed=SEED)
    flat = other.set_budget(3.0, clip=1.0, **budget)
    fresh = ft.Optimizer(groups(make_params(np.zeros(N, np.float32))), generated / "dp_sgd", seed=SEED)
    assert fresh.set_budget(3.0, clip=CLIPS, proportional_noise=True, **budget) == flat


def test_checkpoint_keeps_the_groups(generated):
    params = make_params(np.zeros(N, np.float32))
    opt = ft.Optimizer(groups(params), generated / "dp_sgd", seed=SEED)
    opt.set_dp(CLIPS, 1.0, 4, proportional_noise=True)
    state = opt.state_dict()
    resumed = ft.Optimizer(groups(make_params(np.zeros(N, np.float32))), generated / "dp_sgd", seed=SEED)
    resumed.load_state_dict(state)
    dp = resumed._handle.info()["dp"]
    assert [g["clip_norm"] for g in dp["clip_groups"]] == CLIPS and dp["proportional_noise"]
    scales, _ = resumed.privatize([torch.zeros(3, *p.shape) for p in resumed._params()])
    assert tuple(scales.shape) == (2, 3)


def test_bad_settings_refused(generated):
    params = make_params(np.zeros(N, np.float32))
    opt = ft.Optimizer(groups(params), generated / "dp_sgd", seed=SEED)
    with pytest.raises(ValueError, match="3 clipping norms for 2 parameter groups"):
        opt.set_dp([1.0, 1.0, 1.0], 1.0, 4)
    with pytest.raises(ValueError, match="give clip as a list"):
        opt.set_dp(1.0, 1.0, 4, proportional_noise=True)
    with pytest.raises(FibergenError, match="clip group 1: clipping norm 0: want a finite value > 0"):
        opt.set_dp([1.0, 0.0], 1.0, 4)
    with pytest.raises(ValueError, match="clipping norm nan of parameter group 1"):
        opt.set_dp([1.0, float("nan")], 1.0, 4)
    opt.set_dp(CLIPS, 1.0, 4)
    ex = [torch.zeros(3, *p.shape) for p in params]
    with pytest.raises(ValueError, match=r"scales of shape \(3,\) for 3 examples, want \(2, 3\)"):
        opt.privatize(ex, scales=torch.ones(3))
    with pytest.raises(ValueError, match=r"cur_norms has shape \(3,\), want \(2, 3\)"):
        opt.clip_scales(torch.ones(3))
    opt.set_dp(1.0, 1.0, 4)
    assert tuple(opt.privatize(ex)[0].shape) == (3,)


def test_c_abi_checks_the_scales_length(generated):
    """Every privatize call of the C ABI takes its scales' length, k or k·G,
    and refuses another: a C caller that sized them for k examples under
    clip groups gets an error, not a write past its buffer."""
    params = make_params(np.zeros(N, np.float32))
    opt = ft.Optimizer(groups(params), generated / "dp_sgd", seed=SEED)
    opt.set_dp(CLIPS, 1.0, 4)
    rows, out, scales = torch.zeros(3, N), torch.zeros(N), torch.empty(6)
    with pytest.raises(FibergenError, match=r"the scales hold 3 floats; 3 examples want 6"):
        opt._handle.privatize(out.data_ptr(), N, rows.data_ptr(), 0, 3, 0, scales.data_ptr(), 3)
    assert opt._handle.privatize(out.data_ptr(), N, rows.data_ptr(), 0, 3, 0, scales.data_ptr(), 6) == 0
