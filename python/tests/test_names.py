"""Torch's habits: the hypers' torch names (the aliases the .dsl declares,
docs/dsl.md) as keyword arguments and in param_groups, schedulers that take
the learning rate to 0, and errors that name the keyword argument to pass."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import fibergen._lib as fl
import fibergen.torch as ft
from fibergen import FibergenError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ["dp_adamw", "fiber"]


def model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(4 * 6 * 6, 10))


def bits(params) -> np.ndarray:
    return torch.cat([p.detach().reshape(-1) for p in params]).numpy().view(np.uint32).copy()


def step(opt: ft.Optimizer, params: list[torch.Tensor], t: int) -> None:
    """One step on a made-up clipped mean, which the trainer vouches for."""
    g = torch.Generator().manual_seed(1000 + t)
    for p in params:
        p.grad.copy_(0.1 * torch.randn(p.shape, generator=g))
    opt.trust_clipped_grad()
    opt.step()


def trained(generated: Path, name: str, steps: int = 5, groups=None, **hypers) -> np.ndarray:
    m = model()
    params = list(m.parameters())
    opt = ft.Optimizer(groups(params) if groups else params, generated / name, seed=11, **hypers)
    opt.set_dp(clip=1.0, noise_multiplier=1.1, expected_batch_size=32)
    for t in range(steps):
        step(opt, params, t)
    return bits(params)


def runtime_hypers(opt: ft.Optimizer) -> dict[str, float]:
    return {h["name"]: h["value"] for h in opt._handle.info()["hypers"]}


@pytest.mark.parametrize("name", SHIPPED)
def test_torch_names_run_as_fibergen_names(generated, name):
    """weight_decay, betas and eps give the run the fibergen names give, bit
    for bit, and not the defaults' run."""
    torch_names = trained(generated, name, weight_decay=0.1, betas=(0.8, 0.95), eps=1e-7)
    own_names = trained(generated, name, wd=0.1, beta1=0.8, beta2=0.95, eps=1e-7)
    assert (torch_names == own_names).all()
    assert (torch_names != trained(generated, name)).any()


def test_torch_names_per_group(generated):
    """A group's own torch names reach its range as its fibergen names do."""
    def torch_groups(ps):
        return [{"params": ps[:2]}, {"params": ps[2:], "weight_decay": 0.05, "betas": (0.85, 0.99)}]

    def own_groups(ps):
        return [{"params": ps[:2]}, {"params": ps[2:], "wd": 0.05, "beta1": 0.85, "beta2": 0.99}]
    assert (trained(generated, "fiber", groups=torch_groups) == trained(generated, "fiber", groups=own_groups)).all()


def test_param_groups_show_torch_names(generated):
    opt = ft.Optimizer(model().parameters(), generated / "dp_adamw", weight_decay=0.1, betas=(0.8, 0.95))
    g = opt.param_groups[0]
    assert g["betas"] == (0.8, 0.95) and g["beta1"] == 0.8 and g["beta2"] == 0.95
    assert g["weight_decay"] == 0.1 and g["wd"] == 0.1 and g["eps"] == 1e-8 and g["lr"] == 1e-3
    assert opt.defaults["betas"] == (0.8, 0.95) and opt.defaults["weight_decay"] == 0.1
    g["betas"] = (0.5, 0.9)  # either name sets the hyper; the runtime has it at the next step
    g["wd"] = 0.2
    assert g["beta1"] == 0.5 and g["weight_decay"] == 0.2
    opt.set_dp(clip=1.0, noise_multiplier=1.1, expected_batch_size=32)
    step(opt, list(opt._params()), 0)
    got = runtime_hypers(opt)
    assert (got["beta1"], got["beta2"], got["wd"]) == (0.5, 0.9, 0.2)


def test_param_groups_torch_names_survive_a_checkpoint(generated):
    opt = ft.Optimizer(model().parameters(), generated / "dp_adamw", seed=1, betas=(0.8, 0.95))
    opt.set_dp(clip=1.0, noise_multiplier=1.1, expected_batch_size=32)
    step(opt, list(opt._params()), 0)
    sd = opt.state_dict()
    again = ft.Optimizer(model().parameters(), generated / "dp_adamw")
    again.load_state_dict(sd)
    assert again.param_groups[0]["betas"] == (0.8, 0.95) and again.param_groups[0]["beta2"] == 0.95


def test_unknown_and_conflicting_names(generated):
    with pytest.raises(ValueError, match=r"no hyper momentum \(it accepts: lr, beta1, beta2, eps, wd, "
                                         r"weight_decay \(wd\), betas=\(beta1, beta2\)\)"):
        ft.Optimizer(model().parameters(), generated / "dp_adamw", momentum=0.9)
    with pytest.raises(ValueError, match=r"betas = \(0.9,\): want 2 numbers, \(beta1, beta2\)"):
        ft.Optimizer(model().parameters(), generated / "dp_adamw", betas=(0.9,))
    with pytest.raises(ValueError, match="hyper wd given twice"):
        ft.Optimizer(model().parameters(), generated / "dp_adamw", wd=0.1, weight_decay=0.2)
    with pytest.raises(ValueError, match="no hyper betas"):  # dp_sgd declares no betas
        ft.Optimizer(model().parameters(), generated / "dp_sgd", betas=(0.9, 0.99))


def test_scheduler_changes_lr_in_the_runtime(generated):
    opt = ft.Optimizer(model().parameters(), generated / "dp_adamw", seed=1, lr=0.01)
    opt.set_dp(clip=1.0, noise_multiplier=1.1, expected_batch_size=32)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    step(opt, list(opt._params()), 0)
    sched.step()
    step(opt, list(opt._params()), 1)
    assert runtime_hypers(opt)["lr"] == 0.005


@pytest.mark.parametrize("name", SHIPPED)
def test_lambda_warmup_from_zero(generated, name):
    """LambdaLR's warm-up starts at lr = 0: step 0 leaves the parameters as
    they are, bit for bit, and the steps after move them."""
    m = model()
    params = list(m.parameters())
    opt = ft.Optimizer(params, generated / name, seed=3)
    opt.set_dp(clip=1.0, noise_multiplier=1.1, expected_batch_size=32)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(s / 3, 1.0))
    before = bits(params)
    step(opt, params, 0)
    assert runtime_hypers(opt)["lr"] == 0.0 and (bits(params) == before).all()
    sched.step()
    step(opt, params, 1)
    assert (bits(params) != before).any()


@pytest.mark.parametrize("name", SHIPPED)
def test_cosine_annealing_to_zero(generated, name):
    """CosineAnnealingLR with its eta_min = 0 ends at lr = 0, a step there
    leaves the parameters as they are."""
    m = model()
    params = list(m.parameters())
    opt = ft.Optimizer(params, generated / name, seed=3)
    opt.set_dp(clip=1.0, noise_multiplier=1.1, expected_batch_size=32)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    for t in range(4):
        step(opt, params, t)
        sched.step()
    assert opt.param_groups[0]["lr"] == 0.0
    before = bits(params)
    step(opt, params, 4)
    assert runtime_hypers(opt)["lr"] == 0.0 and (bits(params) == before).all()


def test_errors_name_the_keyword_argument(generated):
    """fiber at gamma = 0.5 mixes with a = 1.33, outside [0, 1]: the error
    says to pass allow_extrapolation=True, not a Go option, and that works."""
    with pytest.raises(FibergenError) as e:
        ft.Optimizer(model().parameters(), generated / "fiber", gamma=0.5)
    assert "allow_extrapolation=True" in str(e.value) and "Options." not in str(e.value)
    ft.Optimizer(model().parameters(), generated / "fiber", gamma=0.5, allow_extrapolation=True)


def test_no_host_kernel_says_what_python_can_do(generated, tmp_path):
    """Without its host kernel, the CPU cannot step: the error says to build
    it, not to open Backend Go, which the binding has no argument for."""
    shutil.copytree(generated / "dp_sgd", tmp_path / "dp_sgd", ignore=shutil.ignore_patterns("*.so"))
    with pytest.raises(FibergenError, match="no host kernel") as e:
        ft.Optimizer(model().parameters(), tmp_path / "dp_sgd")
    assert "Backend" not in str(e.value) and "Options." not in str(e.value)


def go_messages() -> list[str]:
    """The string literals of the runtime's Go sources (adjacent ones joined,
    as + joins them) that name one of its Options."""
    out = []
    for path in sorted((ROOT / "runtime").glob("*.go")):
        if path.name.endswith("_test.go"):
            continue
        src = re.sub(r'"\s*\+\s*\n\s*"', "", path.read_text())
        out += [lit for lit in re.findall(r'"(?:[^"\\\n]|\\.)*"', src) if "Options." in lit]
    return out


def test_every_option_a_message_names_is_translated():
    """Each runtime message that names a Go option reads, in Python, with the
    keyword argument instead (Options.Driver, the simulated device's, is not
    reachable from Python)."""
    msgs = go_messages()
    assert len(msgs) >= 4, msgs
    for msg in msgs:
        left = set(re.findall(r"Options\.\w+", fl.pythonic(msg))) - {"Options.Driver"}
        assert not left, f"{msg}\n\tstill names {left} in Python: add it to fibergen._lib.PYTHON_ADVICE"
