#!/usr/bin/env bash
# gpu-check.sh: every check and benchmark of fibergen that needs an NVIDIA GPU, in one run,
# on a GPU host that has the NVIDIA driver and none of fibergen's build tools (no Go, no LLVM).
#
#   on a build machine:  make gpu-bundle              # static test binaries and fibergen in bin/gpu/
#   copy the repository (with bin/gpu/) to the GPU host, then from its root:
#                        scripts/gpu-check.sh OUTDIR  # a log per check in OUTDIR; exit 1 if any failed
#
# It runs, with FIBERGEN_REQUIRE_CUDA=1 so that a missing driver or device fails instead of
# skipping: the driver binding's tests (runtime/cudadrv), the runtime's CUDA backend against the
# Go backend (runtime: CUDA, StepDevice, Shard, the reductions), the PTX kernels against the Go reference bit for bit
# (tests: GPU, secure noise included), then `fibergen bench generated/NAME --backend cuda` for fiber,
# dp_adamw and dp_sgd at n = 64M and 256M in both noise modes, and lamb and lars with Philox, and
# dp_adamw_bf16 and, built for bfloat16 parameters (bin/gpu/generated-bf16), dp_adamw, dp_adamw_bf16
# and fiber_bf16 (JSON: step and device-to-device copy bandwidth of the same run), and, where
# Python can import torch, scripts/torch_adamw.py at the same sizes (float32 and bfloat16), and
# blt_sgd and blt_adam's step (issue 33); the PyTorch binding's CUDA tests
# (python/tests/test_cuda.py, on bin/gpu/libfibergen.so and bin/gpu/generated) run before the benches.
# With GPU_CHECK_BUDGET=S the whole run gets S seconds: each check is given what is left and a
# check that finds none is reported SKIPPED (a device session's time is short; the checks are in
# order of what a failure would cost). Each line gives the check's time.
# docs/benchmarks.md says how to record the results.
set -uo pipefail

out=${1:?usage: scripts/gpu-check.sh OUTDIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/bin/gpu
for f in cudadrv.test runtime.test tests.test fibergen libfibergen.so; do
	[ -f "$bin/$f" ] || { echo "gpu-check: $bin/$f is missing: run 'make gpu-bundle' on a machine with Go first" >&2; exit 2; }
done
export FIBERGEN_REQUIRE_CUDA=1
failed=0
budget=${GPU_CHECK_BUDGET:-86400}
[[ $budget =~ ^[0-9]+$ ]] || { echo "gpu-check: GPU_CHECK_BUDGET=$budget: want a number of seconds" >&2; exit 2; }
deadline=$(($(date +%s) + budget))

# check NAME DIR CMD...: runs CMD in DIR, its output in OUTDIR/NAME.log, in the time left.
check() {
	local name=$1 dir=$2 left=$((deadline - $(date +%s))) t0
	shift 2
	if [ "$left" -le 5 ]; then
		echo "SKIPPED $name (GPU_CHECK_BUDGET spent)"
		failed=1
		return
	fi
	t0=$(date +%s)
	# --foreground: ^C and an outer kill still reach the check, which stays in the script's group.
	if (cd "$dir" && timeout --foreground -k 10 "$left" "$@") >"$out/$name.log" 2>&1; then
		echo "ok      $name ($(($(date +%s) - t0)) s)"
	else
		local rc=$? why=""
		[ "$rc" -eq 124 ] && why=", GPU_CHECK_BUDGET ran out"
		echo "FAILED  $name (exit $rc$why, $(($(date +%s) - t0)) s; $out/$name.log)"
		failed=1
	fi
}

{ date -u; nvidia-smi; } >"$out/machine.txt" 2>&1
check cudadrv "$root/runtime/cudadrv" "$bin/cudadrv.test" -test.v -test.timeout 30m
check runtime-cuda "$root/runtime" env FIBERGEN_GENERATED="$bin/generated" "$bin/runtime.test" -test.run 'CUDA|StepDevice|Shard' -test.v -test.timeout 30m
check kernels-gpu "$root/tests" "$bin/tests.test" -test.run 'GPU' -test.v -test.timeout 60m
if python3 -c 'import torch, pytest' 2>/dev/null; then
	check torch-binding-cuda "$root" env FIBERGEN_LIB="$bin/libfibergen.so" FIBERGEN_BIN="$bin/fibergen" FIBERGEN_GENERATED="$bin/generated" \
		python3 -m pytest -v -p no:cacheprovider python/tests/test_cuda.py
else
	echo "FAILED  torch-binding-cuda (python3 cannot import torch and pytest)"
	failed=1
fi
for n in 64M 256M; do
	for o in fiber dp_adamw dp_sgd; do
		for mode in philox secure; do # issue 37: secure within 1.3x of philox, same run
			check "bench-$o-$n-$mode" "$root" "$bin/fibergen" bench "generated/$o" --backend cuda --n "$n" --steps 50 --noise-mode "$mode" --json
		done
	done
	for o in lamb lars blt_sgd blt_adam; do # issue 34: the reduction pass before the step; issue 33: noise buffers
		check "bench-$o-$n-philox" "$root" "$bin/fibergen" bench "generated/$o" --backend cuda --n "$n" --steps 50 --json
	done
	for o in dp_adamw dp_adamw_bf16 fiber_bf16; do # issue 35: bfloat16 states and parameters (built with --params bf16)
		check "bench-$o-params-bf16-$n" "$root" "$bin/fibergen" bench "$bin/generated-bf16/$o" --backend cuda --n "$n" --steps 50 --json
	done
	check "bench-dp_adamw_bf16-$n" "$root" "$bin/fibergen" bench "generated/dp_adamw_bf16" --backend cuda --n "$n" --steps 50 --json
	if python3 -c 'import torch' 2>/dev/null; then
		check "torch-adamw-$n" "$root" python3 scripts/torch_adamw.py --n "$n" --steps 50 --json
		check "torch-adamw-bf16-$n" "$root" python3 scripts/torch_adamw.py --n "$n" --steps 50 --dtype bfloat16 --json
	fi
done
exit $failed
