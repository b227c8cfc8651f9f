"""Optimizers with 16-bit states (docs/dsl.md, "Storage types") through
the binding: the states are bfloat16 and float16 tensors, the steps are
bit for bit `fibergen run`'s on the go and cpu backends, and a state_dict
restores them exactly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

import fibergen.torch as ft
from test_exact import SEED, SIGMA_W2, SHAPES, TENSORS, data, fibergen_run, make_params, step_on

ROOT = Path(__file__).resolve().parents[2]
DSL = ROOT / "runtime" / "testdata" / "storage.dsl"
DTYPES = {"m": torch.bfloat16, "v": torch.bfloat16, "s": torch.bfloat16, "c": torch.float32,
          "h": torch.float16, "q": torch.float16}


@pytest.fixture(scope="module")
def built(fibergen_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("storage")
    subprocess.run([str(fibergen_bin), "build", "-o", str(out), str(DSL)], check=True, stdout=subprocess.DEVNULL)
    return out / "storage"


def test_steps_match_fibergen_run(built, fibergen_bin, tmp_path):
    n = sum(int(np.prod(s)) for s in SHAPES)
    theta, grads = data(n, 20)
    np.save(tmp_path / "theta.npy", theta)
    np.save(tmp_path / "grads.npy", grads)
    args = ["--grads", str(tmp_path / "grads.npy"), "--sigma-w2", repr(SIGMA_W2), "--tensors", TENSORS,
            "--state-out", f"m={tmp_path / 'm.npy'}", "--state-out", f"q={tmp_path / 'q.npy'}"]
    want = {b: fibergen_run(fibergen_bin, DSL, tmp_path, b, *args) for b in ("go", "cpu")}
    assert want["go"].tobytes() == want["cpu"].tobytes()

    params = make_params(theta)
    opt = ft.Optimizer(params, built, seed=SEED)
    opt.set_noise(SIGMA_W2)
    got = step_on(opt, params, grads)
    np.testing.assert_array_equal(got.view(np.uint32), want["cpu"].view(np.uint32))
    for name, dtype in DTYPES.items():
        assert opt.state[params[0]][name].dtype == dtype
    for name in ("m", "q"):
        flat = torch.cat([opt.state[p][name].reshape(-1) for p in params]).float().numpy()
        np.testing.assert_array_equal(flat.view(np.uint32), np.load(tmp_path / f"{name}.npy").view(np.uint32))


def test_state_dict_round_trip(built):
    n = sum(int(np.prod(s)) for s in SHAPES)
    theta, grads = data(n, 6, rng_seed=3)

    def run(load: dict | None) -> tuple[np.ndarray, dict]:
        params = make_params(theta)
        opt = ft.Optimizer(params, built, seed=SEED, allow_resume_again=True)
        opt.set_noise(SIGMA_W2)
        saved = None
        if load is not None:
            opt.load_state_dict(load)
            for p, q in zip(params, load["_params"]):
                with torch.no_grad():
                    p.copy_(q)
            rows = grads[3:]
        else:
            step_on(opt, params, grads[:3])
            saved = opt.state_dict()
            saved["_params"] = [p.detach().clone() for p in params]
            rows = grads[3:]
        return step_on(opt, params, rows), saved

    want, saved = run(None)
    for name, dtype in DTYPES.items():
        assert saved["state"][0][name].dtype == dtype
    got, _ = run(saved)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_float32_state_into_bfloat16_refused(built):
    theta = np.zeros(sum(int(np.prod(s)) for s in SHAPES), np.float32)
    sd = ft.Optimizer(make_params(theta), built, seed=SEED).state_dict()
    sd["state"][0]["m"] = sd["state"][0]["m"].float()  # a float32 checkpoint's state, say
    opt = ft.Optimizer(make_params(theta), built, seed=SEED)
    with pytest.raises(ft.FibergenError, match="state m should be a bfloat16 tensor"):
        opt.load_state_dict(sd)
    assert opt.steps == 0


# --- bfloat16 and float16 parameters ------------------------------------------

PARAMS = [(torch.bfloat16, "nearest", "bf16"), (torch.float16, "stochastic", "f16 stochastic")]


@pytest.fixture(scope="module")
def built_for(fibergen_bin: Path, tmp_path_factory: pytest.TempPathFactory):
    """The storage optimizer built by `fibergen build --params flag`, once
    per flag."""
    dirs: dict[str, Path] = {}

    def build(flag: str) -> Path:
        if flag not in dirs:
            out = tmp_path_factory.mktemp("params")
            subprocess.run([str(fibergen_bin), "build", "--params", flag, "-o", str(out), str(DSL)], check=True,
                           stdout=subprocess.DEVNULL)
            dirs[flag] = out / "storage"
        return dirs[flag]
    return build


def narrowed(x: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """x rounded to dtype to nearest, as float32 values."""
    return torch.from_numpy(x).to(dtype).float().numpy()


@pytest.mark.parametrize("dtype,rounding,flag", PARAMS)
def test_narrow_params_match_fibergen_run(dtype, rounding, flag, built_for, fibergen_bin, tmp_path):
    """A model in bfloat16 or float16: the parameters are views of a flat
    buffer of their dtype, their .grad too, and the steps are `fibergen run
    --params`'s bit for bit (the clipped means rounded to the dtype, as
    .grad holds them)."""
    n = sum(int(np.prod(s)) for s in SHAPES)
    theta, grads = data(n, 20)
    theta, grads = narrowed(theta, dtype), narrowed(grads, dtype)
    np.save(tmp_path / "theta.npy", theta)
    np.save(tmp_path / "grads.npy", grads)
    args = ["--grads", str(tmp_path / "grads.npy"), "--sigma-w2", repr(SIGMA_W2), "--tensors", TENSORS,
            "--params", flag]
    want = {b: fibergen_run(fibergen_bin, DSL, tmp_path, b, *args) for b in ("go", "cpu")}
    assert want["go"].tobytes() == want["cpu"].tobytes()
    assert not np.array_equal(want["cpu"], theta)

    params = [torch.nn.Parameter(p.detach().to(dtype)) for p in make_params(theta)]
    opt = ft.Optimizer(params, built_for(flag), seed=SEED, param_rounding=rounding)
    opt.set_noise(SIGMA_W2)
    got = torch.from_numpy(step_on(opt, params, grads))
    assert all(p.dtype == dtype and p.grad.dtype == dtype for p in params)
    np.testing.assert_array_equal(got.numpy().view(np.uint32), want["cpu"].view(np.uint32))


def test_bfloat16_privatize_sums_in_float32(built_for, fibergen_bin, tmp_path):
    """privatize on a bfloat16 model's per-example gradients: the clipped sum
    the noise is added to is the float32 one `fibergen run --example-grads`
    computes, not one rounded to bfloat16 (decision 130), and .grad shows it
    rounded to nearest."""
    n, batch, steps, clip, sigma = sum(int(np.prod(s)) for s in SHAPES), 6, 5, 0.5, 0.8
    rng = np.random.default_rng(4)
    theta = narrowed(rng.normal(0, 1, n).astype(np.float32), torch.bfloat16)
    cur = narrowed(rng.normal(0, 0.3, (steps, batch, n)).astype(np.float32), torch.bfloat16)
    np.save(tmp_path / "theta.npy", theta)
    np.save(tmp_path / "cur.npy", cur)
    want = fibergen_run(fibergen_bin, DSL, tmp_path, "cpu", "--example-grads", str(tmp_path / "cur.npy"),
                        "--clip", str(clip), "--noise-multiplier", str(sigma), "--tensors", TENSORS,
                        "--params", "bf16", "--clipped-out", str(tmp_path / "clipped.npy"))
    clipped = np.load(tmp_path / "clipped.npy")

    params = [torch.nn.Parameter(p.detach().bfloat16()) for p in make_params(theta)]
    opt = ft.Optimizer(params, built_for("bf16"), seed=SEED)
    opt.set_dp(clip, sigma, batch)
    for t in range(steps):
        rows, off = [], 0
        for p in params:
            rows.append(torch.from_numpy(cur[t, :, off:off + p.numel()].copy()).reshape(batch, *p.shape).bfloat16())
            off += p.numel()
        opt.privatize(rows)
        np.testing.assert_array_equal(opt._grad[:n].numpy().view(np.uint32), clipped[t].view(np.uint32))
        shown = torch.cat([p.grad.reshape(-1) for p in params])
        assert torch.equal(shown, torch.from_numpy(clipped[t]).bfloat16())
        opt.step()
    got = torch.cat([p.detach().float().reshape(-1) for p in params]).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_narrow_params_state_dict_round_trip(built_for):
    n = sum(int(np.prod(s)) for s in SHAPES)
    theta, grads = data(n, 6, rng_seed=5)
    theta, grads = narrowed(theta, torch.float16), narrowed(grads, torch.float16)

    def run(load: dict | None) -> tuple[np.ndarray, dict | None]:
        params = [torch.nn.Parameter(p.detach().half()) for p in make_params(theta)]
        opt = ft.Optimizer(params, built_for("f16 stochastic"), seed=SEED, allow_resume_again=True, param_rounding="stochastic")
        opt.set_noise(SIGMA_W2)
        saved = None
        if load is not None:
            opt.load_state_dict(load)
            with torch.no_grad():
                for p, q in zip(params, load["_params"]):
                    p.copy_(q)
        else:
            step_on(opt, params, grads[:3])
            saved = opt.state_dict()
            saved["_params"] = [p.detach().clone() for p in params]
        return step_on(opt, params, grads[3:]), saved

    want, saved = run(None)
    got, _ = run(saved)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_narrow_params_bad_input(built):
    """A float64 parameter, mixed dtypes, stochastic rounding of float32
    parameters and a directory built for float32 parameters given bfloat16
    ones: each a clear error, before anything is opened."""
    bf16, f32 = torch.zeros(3, dtype=torch.bfloat16), torch.zeros(2)
    cases = [
        ([torch.zeros(3, dtype=torch.float64)], {}, ft.FibergenError, "dtype torch.float64: the kernels store float32"),
        ([f32, bf16], {}, ft.FibergenError, "parameter 0 is torch.float32, parameter 1 torch.bfloat16"),
        ([{"params": [bf16]}, {"params": [f32]}], {}, ft.FibergenError, "parameter 1 torch.float32"),
        ([f32], {"param_rounding": "stochastic"}, ValueError, "float32 parameters, whose stores round nothing"),
        ([bf16], {"param_rounding": "up"}, ValueError, "want 'nearest' or 'stochastic'"),
        (bf16, {}, TypeError, "params should be an iterable of Tensors or dicts, but got torch.BFloat16Tensor"),
    ]
    for params, kwargs, err, match in cases:
        with pytest.raises(err, match=match):
            ft.Optimizer(params, DSL, seed=SEED, **kwargs)
    with pytest.raises(ft.FibergenError, match="was built for parameters stored as f32, not bf16: build it with fibergen build --params 'bf16'"):
        ft.Optimizer([bf16], built, seed=SEED)
