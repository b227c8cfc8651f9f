"""Privacy under misuse of the binding: a gradient is released once, a raw
gradient is not released as private, a state is resumed once wherever its
bytes lie, and a damaged or mixed state_dict does not load (issue 29)."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import fibergen.torch as ft
from fibergen import FibergenError

ROOT = Path(__file__).resolve().parents[2]


def model(seed: int = 0) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 4))


def batch(k: int = 8, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(k, 1, 4, 4, generator=g), torch.randint(0, 4, (k,), generator=g)


def privatize(opt: ft.Optimizer, m: torch.nn.Module, seed: int = 1) -> None:
    x, y = batch(seed=seed)
    look = None
    if opt.observation()["kind"] == "two_point":
        with opt.lookahead():
            look = ft.per_example_grads(m, F.cross_entropy, x, y)
    opt.privatize(ft.per_example_grads(m, F.cross_entropy, x, y), look)


def backward(m: torch.nn.Module, seed: int = 2) -> None:
    x, y = batch(seed=seed)
    F.cross_entropy(m(x), y).backward()


def budgeted(generated: Path, name: str = "dp_sgd", **kw) -> tuple[torch.nn.Module, ft.Optimizer]:
    m = model()
    opt = ft.Optimizer(m.parameters(), generated / name, **kw)
    opt.set_budget(3.0, clip=1.0, dataset_size=1000, batch_size=8, epochs=1)
    return m, opt


@pytest.mark.parametrize("groups", [1, 2])
def test_a_gradient_is_released_once(generated, groups):
    """privatize, step, step: the second step is refused, and the budget
    spends for one batch only; with two groups too."""
    m = model()
    ps = list(m.parameters())
    params = [{"params": ps[:1]}, {"params": ps[1:]}] if groups == 2 else ps
    opt = ft.Optimizer(params, generated / "fiber")
    opt.set_budget(3.0, clip=1.0, dataset_size=1000, batch_size=8, epochs=1)
    privatize(opt, m)
    opt.step()
    spent = opt.spent()
    with pytest.raises(FibergenError, match="no gradient for buffer g since the last step"):
        opt.step()
    assert opt.steps == 1 and opt.spent() == spent
    privatize(opt, m, seed=3)
    opt.step()
    assert opt.steps == 2


def test_backward_after_privatize_is_refused(generated):
    """A backward pass into .grad between privatize and step adds a raw
    gradient to the privatized one: the step is refused, naming the way
    out; a privatize after it steps."""
    m, opt = budgeted(generated)
    privatize(opt, m)
    backward(m)
    with pytest.raises(FibergenError, match=r"written outside Privatize.*trust_clipped_grad\(\)"):
        opt.step()
    assert opt.steps == 0 and opt.spent()[0] == 0
    opt.zero_grad()
    privatize(opt, m)
    opt.step()
    assert opt.steps == 1


@pytest.mark.parametrize("alias", ["data", "numpy"])
def test_a_write_through_an_alias_is_refused(generated, alias):
    """A write into .grad through an alias that bumps no version — .data,
    a NumPy view — between privatize and step is a write all the same
    (the gradient's bits at secret positions changed): refused."""
    m, opt = budgeted(generated)
    privatize(opt, m)
    for p in m.parameters():
        raw = p.grad.data if alias == "data" else torch.from_numpy(p.grad.numpy())
        raw.add_(torch.randn(p.grad.shape))
    with pytest.raises(FibergenError, match=r"written outside Privatize"):
        opt.step()
    assert opt.steps == 0 and opt.spent()[0] == 0
    privatize(opt, m, seed=3)
    opt.step()
    assert opt.steps == 1


def test_a_raw_gradient_is_not_released_as_private(generated):
    """loss.backward(); opt.step() under a budget is refused: nothing tells
    a raw gradient from a clipped one but the trainer's word, which
    trust_clipped_grad gives, for one step."""
    m, opt = budgeted(generated)
    backward(m)
    assert sum(p.grad.norm() ** 2 for p in m.parameters()) > 0
    with pytest.raises(FibergenError, match="written outside Privatize"):
        opt.step()
    assert opt.steps == 0 and opt.spent()[0] == 0
    opt.trust_clipped_grad()
    opt.step()
    assert opt.steps == 1
    backward(m, seed=4)
    with pytest.raises(FibergenError, match="written outside Privatize"):
        opt.step()  # the word held for one step


def test_set_dp_refuses_a_raw_gradient_too(generated):
    m = model()
    opt = ft.Optimizer(m.parameters(), generated / "dp_adamw")
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=8)
    backward(m)
    with pytest.raises(FibergenError, match="written outside Privatize"):
        opt.step()
    opt.trust_clipped_grad()
    backward(m, seed=5)  # a write after the word voids it
    with pytest.raises(FibergenError, match="written outside Privatize"):
        opt.step()


def test_set_noise_steps_what_the_trainer_writes(generated):
    """set_noise(..., draw=False): the gradients are privatized already,
    and step takes what the trainer wrote — once per write."""
    m = model()
    opt = ft.Optimizer(m.parameters(), generated / "dp_sgd")
    opt.set_noise(0.01, draw=False)
    for seed in range(3):
        backward(m, seed)
        opt.step()
    with pytest.raises(FibergenError, match="no gradient for buffer g since the last step"):
        opt.step()
    assert opt.steps == 3


def test_a_copied_state_dict_file_is_resumed_once(generated, tmp_path):
    """A state_dict saved with torch.save resumes once on this machine,
    whichever file or process it comes from: a copy loaded in another
    process is refused."""
    m, opt = budgeted(generated, "fiber", seed=11)
    privatize(opt, m)
    opt.step()
    torch.save(opt.state_dict(), tmp_path / "a.pt")
    shutil.copy(tmp_path / "a.pt", tmp_path / "b.pt")
    fresh = ft.Optimizer(model().parameters(), generated / "fiber")
    fresh.load_state_dict(torch.load(tmp_path / "a.pt"))
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'python')!r}); import torch, fibergen.torch as ft\n"
            f"opt = ft.Optimizer(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 4)).parameters(), "
            f"{str(generated / 'fiber')!r})\n"
            f"try:\n    opt.load_state_dict(torch.load({str(tmp_path / 'b.pt')!r}))\n"
            f"except ft.FibergenError as e:\n    print('refused:', e)\nelse:\n    print('resumed')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("refused:") and "was resumed before" in out, out


def test_concurrent_loads_resume_once(generated, tmp_path):
    """Processes loading one state_dict at once: exactly one resumes."""
    m, opt = budgeted(generated, "dp_sgd", seed=12)
    privatize(opt, m)
    opt.step()
    torch.save(opt.state_dict(), tmp_path / "s.pt")
    code = (f"import sys; sys.path.insert(0, {str(ROOT / 'python')!r}); import torch, fibergen.torch as ft\n"
            f"opt = ft.Optimizer(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 4)).parameters(), "
            f"{str(generated / 'dp_sgd')!r})\n"
            f"try:\n    opt.load_state_dict(torch.load({str(tmp_path / 's.pt')!r}))\n"
            f"except ft.FibergenError as e:\n    print('refused:', e)\nelse:\n    print('resumed')\n")
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(4)]
    outs = [p.communicate()[0] for p in procs]
    assert sum(o.startswith("resumed") for o in outs) == 1, outs
    assert sum("was resumed before" in o for o in outs) == 3, outs


def two_groups(generated: Path, **kw) -> tuple[torch.nn.Module, ft.Optimizer]:
    m = model()
    ps = list(m.parameters())
    return m, ft.Optimizer([{"params": ps[:1]}, {"params": ps[1:]}], generated / "fiber", **kw)


def test_a_damaged_state_does_not_load(generated):
    """A bit flipped in a state tensor, group checkpoints of different
    steps: refused before anything changes."""
    m, opt = two_groups(generated, seed=13)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=8)
    privatize(opt, m)
    opt.step()
    early = opt.state_dict()
    privatize(opt, m, seed=4)
    opt.step()
    sd = opt.state_dict()
    flipped = copy.deepcopy(sd)
    v = flipped["state"][1]["v"].view(torch.int32)
    v[3] ^= 1
    mixed = copy.deepcopy(sd)
    mixed["state"][0] = copy.deepcopy(early["state"][0])
    for bad, msg in [(flipped, "not those saved with the checkpoint"), (mixed, "different runs or steps")]:
        _, fresh = two_groups(generated)
        with pytest.raises(FibergenError, match=msg):
            fresh.load_state_dict(bad)
        assert fresh.steps == 0 and all(not s.any() for g in fresh._groups for s in g.states[:1])
    _, ok = two_groups(generated)
    ok.load_state_dict(sd)
    assert ok.steps == 2


def test_a_state_dict_without_the_digest_loads_with_a_warning(generated):
    """A state_dict saved before the checkpoints held the states' digest
    (fibergen before ABI 4) loads, its states unchecked, with a warning."""
    m, opt = two_groups(generated, seed=14)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=8)
    privatize(opt, m)
    opt.step()
    sd = opt.state_dict()
    for i, g in enumerate(opt._groups):  # the checkpoints as fibergen wrote them before
        sd["state"][i]["checkpoint"] = torch.frombuffer(bytearray(g.handle.save()), dtype=torch.uint8)
    _, fresh = two_groups(generated)
    with pytest.warns(RuntimeWarning, match="predates the digest"):
        fresh.load_state_dict(sd)
    assert fresh.steps == 1


def test_no_noise_warns(generated):
    """DP settings that draw no noise (σ_DP = 0, set_noise(0)) say at once
    that the output is not private, as the CLI does; noise does not."""
    m = model()
    opt = ft.Optimizer(m.parameters(), generated / "dp_sgd", seed=1)
    for call in (lambda: opt.set_dp(1.0, 0.0, 8), lambda: opt.set_noise(0.0)):
        with pytest.warns(RuntimeWarning, match=r"the steps add no DP noise, so the output is not private"):
            call()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        opt.set_dp(1.0, 1.0, 8)
        opt.set_noise(0.5, draw=False)  # the trainer privatized it: nothing to say


def test_made_up_scales_refused(generated):
    """privatize(..., scales=) clips only by the scales clip_scales returned
    last, at this step, once: all-ones scales would let every example past
    the norm C the accountant is told."""
    m = model()
    opt = ft.Optimizer(m.parameters(), generated / "dp_adamw", seed=1)
    opt.set_dp(1.0, 1.0, 8)
    x, y = batch()
    rows = {p: 100 * g for p, g in ft.per_example_grads(m, F.cross_entropy, x, y).items()}
    with pytest.raises(FibergenError, match=r"not those clip_scales\(\) returned last"):
        opt.privatize(rows, scales=torch.ones(8))
    norms = torch.cat([g.reshape(8, -1) for g in rows.values()], 1).norm(dim=1)
    scales = opt.clip_scales(norms)
    opt.privatize(rows, scales=scales)
    assert torch.cat([p.grad.reshape(-1) for p in m.parameters()]).norm() <= 1.0 + 1e-5  # the mean of clipped rows


def test_load_keeps_the_dp_settings_made(generated, tmp_path):
    """load_state_dict does not replace DP settings made before it: a
    checkpoint of other ones is refused, naming both; the same ones, or none
    made, load."""
    def opened(sigma=None):
        m = model()
        opt = ft.Optimizer(m.parameters(), generated / "dp_sgd", seed=1, allow_resume_again=True)
        if sigma is not None:
            opt.set_dp(1.0, sigma, 8)
        return m, opt
    m, opt = opened(1.0)
    privatize(opt, m)
    opt.step()
    state = opt.state_dict()
    with pytest.raises(FibergenError, match=r"σ_DP = 1\b.*σ_DP = 2\b"):
        opened(2.0)[1].load_state_dict(state)
    for sigma in (1.0, None):
        _, fresh = opened(sigma)
        fresh.load_state_dict(state)
        assert fresh.sigma_w2 == opt.sigma_w2
