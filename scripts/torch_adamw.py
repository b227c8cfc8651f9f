#!/usr/bin/env python3
"""Time PyTorch's fused AdamW on the GPU, the baseline of fibergen's CUDA step.

Usage: python3 scripts/torch_adamw.py [--n 64M] [--steps 50] [--dtype float32|bfloat16] [--json]

Over one float32 CUDA tensor of n coordinates it times, with CUDA events, as
`fibergen bench --backend cuda` times a fibergen kernel:

  adamw     torch.optim.AdamW(fused=True).step() on a gradient that is already
            privatized: what fibergen's dp_adamw does minus drawing the noise;
  dp_adamw  the same step after adding N(0, sigma_w^2) noise to the gradient
            with torch.randn (Philox), as a PyTorch DP trainer (Opacus) does,
            sigma_w = 1/256 as in fibergen bench (sigma_DP = 1, C = 1, B = 256);
  dp_adamw_compiled
            the strongest PyTorch peer: the noise, its addition and AdamW's
            update written as one function and compiled by torch.compile
            (Inductor fuses them into one kernel that draws the noise in
            registers, as fibergen's does); checked against torch.optim.AdamW
            without noise before it is timed. Where torch.compile is not
            available (no Triton, no compiler), its entry says why;
  copy      a device-to-device copy of the bytes one AdamW step must move.

Bytes are counted as fibergen bench counts dp_adamw's: per coordinate, read
theta, g, m, v and write theta, m, v: 28 bytes. With --dtype bfloat16 the
parameter, its gradient, the noise and AdamW's states are bfloat16 (a
bfloat16 model under fused AdamW): 14 bytes, and no compiled peer (its check
against the eager step is a float32 one); compare it with fibergen bench of
dp_adamw_bf16 built with --params bf16, which moves 16 (its g is float32). A ratio is that step's
bandwidth over the copy's, measured in the same run; compare it with
fibergen bench's `ratio` for generated/dp_adamw on the same GPU.
"""

import argparse
import json
import sys

BYTES_PER_COORDINATE = 4 * (4 + 3)  # dp_adamw: theta, g, m, v read; theta, m, v written (float32)
SIGMA_W = 1.0 / 256


def count(s):
    """An integer with an optional binary suffix K, M or G, as fibergen bench takes."""
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    digits = s[:-1] if scale > 1 else s
    try:
        v = int(digits) * scale
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r}: want an integer (K, M, G: times 2^10, 2^20, 2^30)")
    if v < 1:
        raise argparse.ArgumentTypeError(f"{s!r}: want at least 1")
    return v


def time_ms(torch, fn, steps):
    """Mean milliseconds of fn over steps calls, after three untimed ones."""
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(steps):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / steps


def measure(torch, n, steps, dtype="float32"):
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    dt = getattr(torch, dtype)
    theta = torch.nn.Parameter(torch.randn(n, device=dev, generator=gen).to(dt))
    grad = (0.01 * torch.randn(n, device=dev, generator=gen)).to(dt)
    opt = torch.optim.AdamW([theta], lr=1e-3, weight_decay=0.0, fused=True)

    def adamw():
        theta.grad = grad
        opt.step()

    def dp_adamw():
        theta.grad = grad + SIGMA_W * torch.randn(n, device=dev, generator=gen, dtype=dt)
        opt.step()

    adamw_ms = time_ms(torch, adamw, steps)
    dp_adamw_ms = time_ms(torch, dp_adamw, steps)
    compiled = compiled_step(torch, n, gen) if dtype == "float32" else "not measured for bfloat16"
    compiled_ms = time_ms(torch, compiled, steps) if callable(compiled) else None
    del grad
    theta.grad = None
    step_bytes = BYTES_PER_COORDINATE * n * theta.element_size() // 4
    half = (step_bytes // 2 + 3) // 4  # floats read (and as many written) by the copy
    src = torch.empty(half, device=dev)
    dst = torch.empty_like(src)
    copy_ms = time_ms(torch, lambda: dst.copy_(src), steps)

    copy_gbps = 2 * 4 * half / (copy_ms * 1e-3) / 1e9
    r = {"torch": torch.__version__, "device": torch.cuda.get_device_name(dev), "n": n, "steps": steps, "dtype": dtype,
         "bytes_per_step": step_bytes, "copy_gbps": copy_gbps, "statistic": "mean"}
    for name, ms in (("adamw", adamw_ms), ("dp_adamw", dp_adamw_ms), ("dp_adamw_compiled", compiled_ms)):
        if ms is None:
            r[name] = {"error": compiled}
            continue
        gbps = step_bytes / (ms * 1e-3) / 1e9
        r[name] = {"ms_per_step": ms, "gbps": gbps, "ratio": gbps / copy_gbps}
    return r


def adamw_update(torch, theta, grad, m, v, noise_scale, lr, beta1, beta2, eps, bc1, bc2):
    """One DP-AdamW step in place: g = grad + noise_scale·N(0, 1), then
    AdamW (weight decay 0) with bias corrections bc1, bc2 (0-d tensors, so
    that a new step does not recompile)."""
    g = grad + noise_scale * torch.randn_like(grad)
    m.mul_(beta1).add_(g, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    theta.sub_(lr * (m / bc1) / ((v / bc2).sqrt() + eps))


def compiled_step(torch, n, gen):
    """A step function of the compiled DP-AdamW over fresh tensors of n
    coordinates, after checking 3 noiseless steps against
    torch.optim.AdamW; or a string saying why there is none."""
    dev = torch.device("cuda")
    lr, beta1, beta2, eps = 1e-3, 0.9, 0.999, 1e-8
    try:
        fn = torch.compile(lambda *a: adamw_update(torch, *a), fullgraph=True)
        check = compiled_matches_eager(torch, fn, dev, lr, beta1, beta2, eps)
    except Exception as e:  # Inductor needs Triton and a C compiler on the host
        return f"torch.compile failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if check:
        return check
    theta = torch.randn(n, device=dev, generator=gen)
    grad = 0.01 * torch.randn(n, device=dev, generator=gen)
    m, v = torch.zeros_like(theta), torch.zeros_like(theta)
    bc1, bc2 = torch.ones((), device=dev), torch.ones((), device=dev)
    state = {"t": 0}

    def step():  # the bias corrections filled on the device: no host-to-device copy per step
        state["t"] += 1
        bc1.fill_(1 - beta1 ** state["t"])
        bc2.fill_(1 - beta2 ** state["t"])
        fn(theta, grad, m, v, SIGMA_W, lr, beta1, beta2, eps, bc1, bc2)
    return step


def compiled_matches_eager(torch, fn, dev, lr, beta1, beta2, eps):
    """"" if 3 steps of fn without noise agree with torch.optim.AdamW's to
    1e-6 relative, else what differs."""
    theta = torch.randn(4096, device=dev)
    grad = 0.01 * torch.randn(4096, device=dev)
    ref = torch.nn.Parameter(theta.clone())
    opt = torch.optim.AdamW([ref], lr=lr, betas=(beta1, beta2), eps=eps, weight_decay=0.0)
    m, v = torch.zeros_like(theta), torch.zeros_like(theta)
    for t in range(1, 4):
        fn(theta, grad, m, v, 0.0, lr, beta1, beta2, eps,
           torch.tensor(1 - beta1 ** t, device=dev), torch.tensor(1 - beta2 ** t, device=dev))
        ref.grad = grad.clone()
        opt.step()
    err = ((theta - ref.detach()).abs().max() / ref.detach().abs().max()).item()
    return "" if err < 1e-6 else f"the compiled step differs from torch.optim.AdamW by {err:.2e} (relative)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=count, default=64 << 20, help="coordinates (default 64M)")
    ap.add_argument("--steps", type=count, default=50, help="timed steps (default 50)")
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                    help="the parameter's, its gradient's and the states' (default float32)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("torch_adamw: PyTorch is not installed (python3 -c 'import torch' fails)")
    if not torch.cuda.is_available():
        sys.exit("torch_adamw: PyTorch sees no CUDA device")
    r = measure(torch, a.n, a.steps, a.dtype)
    if a.json:
        print(json.dumps(r, indent=2))
        return
    print(f"PyTorch {r['torch']} on {r['device']}, n={r['n']}, {r['steps']} steps (means)")
    for name in ("adamw", "dp_adamw", "dp_adamw_compiled"):
        s = r[name]
        if "error" in s:
            print(f"  {name:9} {s['error']}")
            continue
        print(f"  {name:9} {s['ms_per_step']:.3f} ms  {s['gbps']:.1f} GB/s  {s['ratio']:.3f} of copy")
    print(f"  copy      {r['copy_gbps']:.1f} GB/s (device-to-device, {r['bytes_per_step'] // r['n']} bytes/coordinate)")


if __name__ == "__main__":
    main()
