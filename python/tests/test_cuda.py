"""The CUDA path: the PTX launched on tensors torch allocated, bit for bit
the host kernel. Skipped without a GPU; FIBERGEN_REQUIRE_CUDA=1 (set by
scripts/gpu-check.sh) makes a missing GPU a failure."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch

import fibergen.torch as ft

if not torch.cuda.is_available():
    if os.environ.get("FIBERGEN_REQUIRE_CUDA") == "1":
        raise RuntimeError("FIBERGEN_REQUIRE_CUDA=1 but torch sees no CUDA device")
    pytest.skip("no CUDA device", allow_module_level=True)

SHAPES = [(33, 17), (5,), (1000, 3), (2,)]


def params(device: str) -> list[torch.nn.Parameter]:
    g = torch.Generator().manual_seed(0)
    return [torch.nn.Parameter(torch.randn(s, generator=g).to(device)) for s in SHAPES]


def run(opt: ft.Optimizer, ps: list[torch.Tensor], steps: range) -> None:
    """Steps on made-up clipped means, which the trainer vouches for."""
    for t in steps:
        g = torch.Generator().manual_seed(100 + t)
        for p in ps:
            p.grad.copy_(0.1 * torch.randn(p.shape, generator=g))
        opt.trust_clipped_grad()
        opt.step()


def bits(ps: list[torch.Tensor]) -> np.ndarray:
    return torch.cat([p.detach().reshape(-1).cpu() for p in ps]).numpy().view(np.uint32)


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("name", ["fiber", "dp_adamw", "dp_sgd", "doppler", "lamb", "lars"])  # lamb, lars: per-tensor norms
def test_cuda_matches_cpu(name, secure, generated):
    got, want = params("cuda"), params("cpu")
    groups = lambda ps: [{"params": ps[:2]}, {"params": ps[2:], "lr": 2e-3}]  # noqa: E731
    noise = {"secure": True} if secure else {"seed": 11}
    gpu = ft.Optimizer(groups(got), generated / name, **noise)
    cpu = ft.Optimizer(groups(want), generated / name, **noise)
    if secure:  # the secure scheme's draws on the GPU and the host, under one key
        cpu._handle.set_key(gpu._handle.share_key())
    for o in (gpu, cpu):
        o.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=64)
    run(gpu, got, range(50))
    run(cpu, want, range(50))
    torch.cuda.synchronize()
    assert (bits(got) == bits(want)).all()
    for g, c in zip(gpu._groups, cpu._groups):
        for s, t in zip(g.states, c.states):
            assert torch.equal(s.cpu(), t)


def test_cuda_nonfinite_and_resume(generated):
    ps = params("cuda")
    opt = ft.Optimizer(ps, generated / "fiber", seed=3)
    opt.set_noise(1e-4)
    run(opt, ps, range(3))
    before = bits(ps)
    ps[1].grad[2] = float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt.step()
    assert opt.found_inf and opt.steps == 3 and (bits(ps) == before).all()
    sd = opt.state_dict()
    ps2 = [torch.nn.Parameter(p.detach().clone()) for p in ps]
    opt2 = ft.Optimizer(ps2, generated / "fiber")
    opt2.load_state_dict(sd)
    run(opt, ps, range(3, 10))
    run(opt2, ps2, range(3, 10))
    assert (bits(ps) == bits(ps2)).all()


@pytest.mark.parametrize("clip", [0.5, [0.25, 1.0]])  # one norm, or per parameter group (proportional noise)
@pytest.mark.parametrize("name", ["fiber", "dp_adamw"])
def test_cuda_privatize_matches_cpu(name, clip, generated):
    got, want = params("cuda"), params("cpu")
    groups = lambda ps: [{"params": ps[:2]}, {"params": ps[2:]}]  # noqa: E731
    gpu = ft.Optimizer(groups(got), generated / name, seed=5)
    cpu = ft.Optimizer(groups(want), generated / name, seed=5)
    two_point = cpu.observation()["kind"] == "two_point"
    for o in (gpu, cpu):
        o.set_dp(clip=clip, noise_multiplier=1.0, expected_batch_size=8, proportional_noise=isinstance(clip, list))
    for t in range(5):
        g = torch.Generator().manual_seed(t)
        cur = [torch.randn(8, *s, generator=g) for s in SHAPES]
        look = [torch.randn(8, *s, generator=g) for s in SHAPES] if two_point else None
        sg, cg = gpu.privatize([c.cuda() for c in cur], [x.cuda() for x in look] if look else None), \
            cpu.privatize(cur, look)
        assert torch.equal(sg[0], cg[0]) and sg[1] == cg[1]
        gpu.step()
        cpu.step()
    assert (bits(got) == bits(want)).all()


def test_cuda_gradient_released_once(generated):
    """On the device as on the host: a privatized gradient steps once, with
    two groups; a write into .grad after privatize is refused under DP."""
    ps = params("cuda")
    opt = ft.Optimizer([{"params": ps[:2]}, {"params": ps[2:]}], generated / "dp_sgd", seed=1)
    opt.set_dp(clip=0.5, noise_multiplier=1.0, expected_batch_size=8)
    g = torch.Generator().manual_seed(0)
    cur = [torch.randn(8, *s, generator=g).cuda() for s in SHAPES]
    opt.privatize(cur)
    opt.step()
    with pytest.raises(ft.FibergenError, match="no gradient for buffer g"):
        opt.step()
    opt.privatize(cur)
    ps[0].grad.add_(1.0)
    with pytest.raises(ft.FibergenError, match="written outside Privatize"):
        opt.step()
    assert opt.steps == 1


@pytest.mark.parametrize("name", ["dp_adamw", "dp_adamw_bf16", "fiber_bf16"])
def test_cuda_bfloat16_params_match_cpu(name, generated):
    """A bfloat16 model: the PTX and the host kernel, built for bfloat16
    parameters (make gpu-bundle's generated-bf16, `fibergen build --params
    bf16`), agree bit for bit, parameters and states."""
    built = generated.parent / "generated-bf16" / name
    if not built.is_dir():
        if os.environ.get("FIBERGEN_REQUIRE_CUDA") == "1":
            raise FileNotFoundError(f"{built}: make gpu-bundle builds it")
        pytest.skip(f"no {built} (make gpu-bundle builds it)")
    got, want = ([torch.nn.Parameter(p.detach().bfloat16()) for p in params(d)] for d in ("cuda", "cpu"))
    gpu, cpu = (ft.Optimizer(ps, built, seed=11) for ps in (got, want))
    for o in (gpu, cpu):
        o.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=64)
    run(gpu, got, range(20))
    run(cpu, want, range(20))
    torch.cuda.synchronize()
    assert all(p.dtype == torch.bfloat16 for p in got)
    assert torch.equal(torch.cat([p.detach().reshape(-1).cpu() for p in got]).view(torch.int16),
                       torch.cat([p.detach().reshape(-1) for p in want]).view(torch.int16))
    for g, c in zip(gpu._groups, cpu._groups):
        for s, t in zip(g.states, c.states):
            assert torch.equal(s.cpu(), t)
