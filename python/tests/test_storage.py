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
