"""Errors raised in Python speak Python: a runtime message that reaches a
user names the method to call or the keyword argument to pass
(``set_dp``, ``load_state_dict``, ``expected_batch_size``), never the Go
method or option behind it (``SetDP``, ``Load``, ``DP.BatchSize``). The
translation is fibergen._lib.PYTHON_ADVICE; these tests meet each message
as a user does, and read every message of the runtime's sources."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import pytest
import torch

import fibergen._lib as fl
import fibergen.torch as ft
from fibergen import FibergenError

ROOT = Path(__file__).resolve().parents[2]

# The runtime's calls that only the binding makes, never a user through it:
# a message about one of them is about the binding's use of the runtime.
BINDING_ONLY = {"UseBuffers", "RegisterRange", "Register", "SetGrad", "StepDevice", "PrivatizeTo", "PrivatizeScaled",
                "PrivatizeSegmentsTo", "PrivatizeDeviceGroups", "AdoptPrivatized", "OpenPackage", "OpenCompiled", "InitDeviceStates",
                "CheckDeviceGradient", "Options.Driver", "Compiled.PTX", "ShareKey", "SetKey"}


def go_sources(package: str) -> dict[Path, str]:
    """The package's Go sources, tests left out, with adjacent string
    literals joined as + joins them."""
    return {p: re.sub(r'"\s*\+\s*\n\s*"', "", p.read_text()) for p in sorted((ROOT / package).glob("*.go"))
            if not p.name.endswith("_test.go")}


def go_api() -> set[str]:
    """What a Go caller of the runtime names: the exported methods of its
    Optimizer and Tensor, its Open functions, the fields of Options, DP and
    Compiled (as Options.X)."""
    src = "\n".join(go_sources("runtime").values())
    names = set(re.findall(r"^func \(\w+ \*?(?:Optimizer|Tensor)\) ([A-Z]\w*)\(", src, re.M))
    names |= set(re.findall(r"^func (Open\w*)\(", src, re.M))
    for struct in ("Options", "DP", "Compiled"):
        body = re.search(r"^type %s struct \{\n(.*?)^\}" % struct, src, re.M | re.S)
        assert body, f"no struct {struct} in runtime/"
        names |= {f"{struct}.{f}" for f in re.findall(r"^\t([A-Z]\w*)\s", body.group(1), re.M)}
    return names


GO_API = go_api()


def go_names(msg: str) -> set[str]:
    """The Go names msg holds: a qualified or mixed-case name anywhere
    (Options.StateDir, SetDP), a one-word method where only a Go name
    stands ("(Load)", "Steps()", "runtime: Step:"), and Backend Go."""
    out = {"Backend Go"} if "Backend Go" in msg else set()
    for n in GO_API:
        e = re.escape(n)
        if "." in n or re.search(r"[a-z][A-Z]", n):
            pattern = rf"\b{e}\b"
        else:
            pattern = rf"\({e}\)|\b{e}\(\)|runtime: {e}:|\bwith {e}\b|\b{e} ="
        if re.search(pattern, msg):
            out.add(n)
    return out


def test_go_names_are_found():
    """The detector the tests below trust finds what it must and no
    English: a test that cannot fail would prove nothing."""
    assert {"SetDP", "Load", "Steps", "Options.StateDir", "DP.BatchSize", "Backend Go"} <= GO_API | {"Backend Go"}
    assert go_names("set the DP settings (SetDP) before Privatize") == {"SetDP"}
    assert go_names("load a checkpoint (Load); stepped (Steps() = 1)") == {"Load", "Steps"}
    assert go_names("runtime: Step: no gradient; DP.BatchSize 3") == {"Step", "DP.BatchSize"}
    assert go_names("runtime: load checkpoint: the optimizer has stepped; set the DP settings") == set()


def test_every_runtime_message_a_user_meets_speaks_python():
    """Every string of the runtime's and the C ABI's sources that names a
    Go method or option a Python user can reach reads, through
    PYTHON_ADVICE, without it."""
    checked = 0
    for package in ("runtime", "capi"):
        for path, src in go_sources(package).items():
            for lit in re.findall(r'"((?:[^"\\\n]|\\.)*)"', src):
                names = go_names(lit)
                if " " not in lit or not names or names & BINDING_ONLY:
                    continue
                checked += 1
                left = go_names(fl.pythonic(lit))
                assert not left, (f"{path.name}: {lit}\n\tstill names {left} in Python: "
                                  "add it to fibergen._lib.PYTHON_ADVICE")
    assert checked >= 20, checked


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(4, 3)


def opened(generated: Path, name: str = "dp_sgd", dp: bool = True) -> tuple[list[torch.Tensor], ft.Optimizer]:
    params = list(model().parameters())
    opt = ft.Optimizer(params, generated / name, seed=1)
    if dp:
        opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=10)
    return params, opt


def budgeted(generated: Path) -> ft.Optimizer:
    opt = opened(generated, dp=False)[1]
    opt.set_budget(3.0, clip=1.0, dataset_size=1000, batch_size=10, epochs=1)
    return opt


def examples(params: list[torch.Tensor], k: int = 2) -> list[torch.Tensor]:
    return [torch.zeros(k, *p.shape) for p in params]


def write_grad(params: list[torch.Tensor]) -> None:
    for p in params:
        p.grad.fill_(0.1)


def trusted_step(params: list[torch.Tensor], opt: ft.Optimizer) -> None:
    write_grad(params)
    opt.trust_clipped_grad()
    opt.step()


def noise_state(generated: Path) -> dict:
    params, opt = opened(generated, dp=False)
    opt.set_noise(1.0)
    write_grad(params)
    opt.step()
    return opt.state_dict()


def case_privatize_first(generated: Path) -> None:
    params, opt = opened(generated, dp=False)
    opt.privatize(examples(params))


def case_stepped_load(generated: Path) -> None:
    params, opt = opened(generated)
    trusted_step(params, opt)
    opt.load_state_dict(opt.state_dict())


def case_step_twice(generated: Path) -> None:
    params, opt = opened(generated)
    trusted_step(params, opt)
    opt.step()


def case_big_batch(generated: Path) -> None:
    params, opt = opened(generated)
    opt.set_dp(clip=1.0, noise_multiplier=1.0, expected_batch_size=1 << 25)
    opt.privatize(examples(params))


def case_diagnostics_off(generated: Path) -> None:
    opened(generated, "fiber")[1].clamp_mass()


def case_diagnostics_no_step(generated: Path) -> None:
    opt = opened(generated, "fiber")[1]
    opt.enable_diagnostics()
    opt.clamp_mass()


def case_trust_twice(generated: Path) -> None:
    params, opt = opened(generated)
    trusted_step(params, opt)
    opt.trust_clipped_grad()


def case_raw_gradient(generated: Path) -> None:
    params, opt = opened(generated)
    write_grad(params)
    opt.step()


def case_lookahead_one_point(generated: Path) -> None:
    params, opt = opened(generated)
    opt.privatize(examples(params), examples(params))


Case = Callable[[Path], None]
CASES: list[tuple[str, Case, str]] = [
    ("set_dp under a budget", lambda g: budgeted(g).set_dp(1.0, 1.0, 10), r"a privacy budget \(set_budget\) sets"),
    ("set_noise under a budget", lambda g: budgeted(g).set_noise(1.0), r"set_noise would bypass it"),
    ("a noise state into a budget", lambda g: budgeted(g).load_state_dict(noise_state(g)),
     r"directly \(set_noise\), but a privacy budget \(set_budget\)"),
    ("step before set_dp", lambda g: trusted_step(*opened(g, dp=False)),
     r"\(set_dp\), or the noise itself \(set_noise\)"),
    ("privatize before set_dp", case_privatize_first, r"\(set_dp\) before privatize\(\)"),
    ("clip_scales before set_dp", lambda g: opened(g, dp=False)[1].clip_scales(torch.ones(2)),
     r"\(set_dp\) before clip_scales\(\)"),
    ("load after a step", case_stepped_load, r"the optimizer has stepped \(steps\(\) = 1\)"),
    ("a second step on one gradient", case_step_twice,
     r"^runtime: step: no gradient .*\(privatize\(\)\) or write it"),
    ("a raw gradient", case_raw_gradient,
     r"not by privatize\(\).*privatize\(\) the per-example.*trust_clipped_grad\(\),"),
    ("trust without a new gradient", case_trust_twice,
     r"^runtime: trust_clipped_grad: .*write one into \.grad first$"),
    ("a batch past 2^24", case_big_batch, r"privatize\(\) divides .*expected_batch_size 33554432 is larger"),
    ("lookahead on a one-point optimizer", case_lookahead_one_point, r"give privatize\(\) no lookahead gradients"),
    ("clip_scales' look_norms on a one-point optimizer",
     lambda g: opened(g)[1].clip_scales(torch.ones(2), torch.ones(2), torch.ones(2)),
     r"give clip_scales\(\) no look_norms"),
    ("clip_scales without look_norms on fiber", lambda g: opened(g, "fiber")[1].clip_scales(torch.ones(2)),
     r"so give clip_scales\(\) look_norms and dots too"),
    ("clip_scales without dots", lambda g: opened(g, "fiber")[1].clip_scales(torch.ones(2), torch.ones(2)),
     r"clip_scales\(\) takes look_norms and dots together"),
    ("diagnostics off", case_diagnostics_off, r"diagnostics are off \(enable_diagnostics\(\)\)"),
    ("diagnostics before a step", case_diagnostics_no_step, r"since enable_diagnostics\(\)"),
]


@pytest.mark.parametrize("case,want", [(c, w) for _, c, w in CASES], ids=[n for n, _, _ in CASES])
def test_a_runtime_error_names_what_python_calls(generated, case, want):
    with pytest.raises(FibergenError) as e:
        case(generated)
    msg = str(e.value)
    assert re.search(want, msg), msg
    assert not go_names(msg), f"{msg}\n\tnames {go_names(msg)}"


def case_meta_gradients(generated: Path) -> None:
    params, opt = opened(generated)
    opt.privatize([torch.empty(2, *p.shape, device="meta") for p in params])


def case_duplicate_parameter(generated: Path) -> None:
    p = torch.nn.Parameter(torch.zeros(3))
    ft.Optimizer([p, p], generated / "dp_sgd")


def case_hyper_string(generated: Path) -> None:
    opened(generated)[1].param_groups[0]["lr"] = "abc"


# Arguments the binding checks before the runtime sees them: each error
# names the argument, in one line, never ctypes' or torch's.
ARGUMENT_CASES: list[tuple[str, Case, type, str]] = [
    ("a clip as a string", lambda g: opened(g)[1].set_dp("1.0", 1.0, 32), TypeError, r"clip = '1\.0': want a real number"),
    ("a batch size not whole", lambda g: opened(g)[1].set_dp(1.0, 1.0, 32.5), TypeError,
     r"expected_batch_size = 32\.5: want a whole number"),
    ("a batch size past 2^53", lambda g: opened(g)[1].set_dp(1.0, 1.0, 2**64 + 32), ValueError,
     r"expected_batch_size = 18446744073709551648: want 1 to 2\^53"),
    ("a noise variance past float64", lambda g: opened(g)[1].set_dp(1e300, 1.0, 32), FibergenError,
     r"too large for a float64"),
    ("a hyper as a string", case_hyper_string, TypeError, r"hyper lr = 'abc': want a real number"),
    ("a hyper as a bool", lambda g: ft.Optimizer(model().parameters(), g / "dp_sgd", lr=True), TypeError,
     r"hyper lr = True: want a real number"),
    ("a parameter twice", case_duplicate_parameter, ValueError, r"parameter 1 of parameter group 0 is an earlier one"),
    ("gradients on the meta device", case_meta_gradients, TypeError, r"per-example gradients 0 is on the meta device"),
    ("a NaN norm", lambda g: opened(g)[1].clip_scales(torch.tensor([1.0, float("nan")])), FibergenError,
     r"a norm given for example 1 is NaN"),
]


@pytest.mark.parametrize("case,kind,want", [(c, k, w) for _, c, k, w in ARGUMENT_CASES], ids=[n for n, *_ in ARGUMENT_CASES])
def test_bad_arguments_named(generated, case, kind, want):
    with pytest.raises(kind) as e:
        case(generated)
    assert re.search(want, str(e.value)), str(e.value)


def test_parameters_as_a_set_refused(generated):
    """A param group's parameters in a set are refused, as torch refuses
    them: their order lays out the flat buffers and changes between runs."""
    p = torch.nn.Parameter(torch.zeros(3))
    with pytest.raises(TypeError, match="ordered collections"):
        ft.Optimizer([{"params": {p}}], generated / "dp_sgd")


def test_clips_as_arrays_and_tensors(generated):
    """One clip norm a group may come as a list, a 1-D tensor or a NumPy
    array; one norm as a number, a 0-d tensor or array."""
    import numpy as np
    m = torch.nn.Linear(4, 3)
    opt = ft.Optimizer([{"params": [m.weight]}, {"params": [m.bias]}], generated / "dp_sgd", seed=1)
    for clips in ([1.0, 2.0], torch.tensor([1.0, 2.0]), np.array([1.0, 2.0])):
        opt.set_dp(clips, 1.0, 8)
        assert [g["clip_norm"] for g in opt._handle.info()["dp"]["clip_groups"]] == [1.0, 2.0]
    for one in (1.5, torch.tensor(1.5), np.array(1.5), np.float32(1.5)):
        opt.set_dp(one, 1.0, 8)
        assert opt._handle.info()["dp"]["clip"] == 1.5
