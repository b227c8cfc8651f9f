#!/usr/bin/env python3
"""Time PyTorch's fused AdamW on the GPU, the baseline of fibergen's CUDA step.

Usage: python3 scripts/torch_adamw.py [--n 64M] [--steps 50] [--json]

Over one float32 CUDA tensor of n coordinates it times, with CUDA events, as
`fibergen bench --backend cuda` times a fibergen kernel:

  adamw     torch.optim.AdamW(fused=True).step() on a gradient that is already
            privatized: what fibergen's dp_adamw does minus drawing the noise;
  dp_adamw  the same step after adding N(0, sigma_w^2) noise to the gradient
            with torch.randn (Philox), as a PyTorch DP trainer (Opacus) does,
            sigma_w = 1/256 as in fibergen bench (sigma_DP = 1, C = 1, B = 256);
  copy      a device-to-device copy of the bytes one AdamW step must move.

Bytes are counted as fibergen bench counts dp_adamw's: per coordinate, read
theta, g, m, v and write theta, m, v: 28 bytes. A ratio is that step's
bandwidth over the copy's, measured in the same run; compare it with
fibergen bench's `ratio` for generated/dp_adamw on the same GPU.
"""

import argparse
import json
import sys

BYTES_PER_COORDINATE = 4 * (4 + 3)  # dp_adamw: theta, g, m, v read; theta, m, v written
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


def measure(torch, n, steps):
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(1)
    theta = torch.nn.Parameter(torch.randn(n, device=dev, generator=gen))
    grad = 0.01 * torch.randn(n, device=dev, generator=gen)
    opt = torch.optim.AdamW([theta], lr=1e-3, weight_decay=0.0, fused=True)

    def adamw():
        theta.grad = grad
        opt.step()

    def dp_adamw():
        theta.grad = grad + SIGMA_W * torch.randn(n, device=dev, generator=gen)
        opt.step()

    adamw_ms = time_ms(torch, adamw, steps)
    dp_adamw_ms = time_ms(torch, dp_adamw, steps)
    del grad
    theta.grad = None
    half = (BYTES_PER_COORDINATE * n // 2 + 3) // 4  # floats read (and as many written) by the copy
    src = torch.empty(half, device=dev)
    dst = torch.empty_like(src)
    copy_ms = time_ms(torch, lambda: dst.copy_(src), steps)

    step_bytes = BYTES_PER_COORDINATE * n
    copy_gbps = 2 * 4 * half / (copy_ms * 1e-3) / 1e9
    r = {"torch": torch.__version__, "device": torch.cuda.get_device_name(dev), "n": n, "steps": steps,
         "bytes_per_step": step_bytes, "copy_gbps": copy_gbps, "statistic": "mean"}
    for name, ms in (("adamw", adamw_ms), ("dp_adamw", dp_adamw_ms)):
        gbps = step_bytes / (ms * 1e-3) / 1e9
        r[name] = {"ms_per_step": ms, "gbps": gbps, "ratio": gbps / copy_gbps}
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=count, default=64 << 20, help="coordinates (default 64M)")
    ap.add_argument("--steps", type=count, default=50, help="timed steps (default 50)")
    ap.add_argument("--json", action="store_true", help="print JSON")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("torch_adamw: PyTorch is not installed (python3 -c 'import torch' fails)")
    if not torch.cuda.is_available():
        sys.exit("torch_adamw: PyTorch sees no CUDA device")
    r = measure(torch, a.n, a.steps)
    if a.json:
        print(json.dumps(r, indent=2))
        return
    print(f"PyTorch {r['torch']} on {r['device']}, n={r['n']}, {r['steps']} steps (means)")
    for name in ("adamw", "dp_adamw"):
        s = r[name]
        print(f"  {name:9} {s['ms_per_step']:.3f} ms  {s['gbps']:.1f} GB/s  {s['ratio']:.3f} of copy")
    print(f"  copy      {r['copy_gbps']:.1f} GB/s (device-to-device, {BYTES_PER_COORDINATE} bytes/coordinate)")


if __name__ == "__main__":
    main()
