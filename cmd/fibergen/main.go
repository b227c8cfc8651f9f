// Command fibergen compiles optimizer descriptions written in fibergen's DSL
// into fused kernels (an LLVM module, PTX for NVIDIA GPUs) and Go reference
// code, explains what it derived, runs an optimizer over gradients stored
// in .npy files, drawing the DP noise inside the step, benchmarks the step
// against the machine's copy bandwidth, and accounts for
// privacy: the ε a run spends, and the noise multiplier that meets a
// target ε (docs/privacy.md), and designs correlated noise: a BLT noise
// filter for a number of steps and a participation pattern
// (docs/correlated-noise.md).
//
// Usage:
//
//	fibergen --version (or fibergen version)
//	fibergen build SOURCE... [-o DIR]
//	fibergen check SOURCE...
//	fibergen explain SOURCE [--ir] [--json] [--set name=value ...] [--steps N [--min-sep B]] [--allow-extrapolation] [--allow-unstable] [--host-isa]
//	fibergen run SOURCE --grads G.npy --theta THETA.npy --out OUT.npy
//	        (--sigma-w2 X | --noise off) [--set name=value ...] [--tensors N,...] [--seed N | --noise-mode secure]
//	        [--backend go|cpu|ptxsim] [--diagnostics] [--no-clamp-warning] [--allow-extrapolation] [--allow-unstable] [--lookahead-out LA.npy] [--state-out NAME=S.npy ...]
//	fibergen run SOURCE --example-grads E.npy [--lookahead-grads L.npy] --clip C
//	        (--noise-multiplier S | --noise off) [--clipped-out CM.npy] --theta THETA.npy --out OUT.npy [...]
//	fibergen bench SOURCE|DIR [--n N | --tensors N,...] [--steps K] [--threads T] [--backend cpu|go|cuda] [--noise-mode philox|secure] [--json]
//	fibergen privacy epsilon --sigma S RUN [--delta D] [OPTIONS]
//	fibergen privacy sigma --epsilon E RUN [--delta D] [OPTIONS]
//	fibergen privacy delta --sigma S --epsilon E RUN [OPTIONS]
//	        RUN: --sample-rate Q --steps T, or --dataset-size N --batch-size B --epochs E
//	        OPTIONS: [--sampling poisson|fixed|cyclic] [--optimizer SOURCE [--set name=value ...]] [--accountant pld|rdp] [--json]
//	                 pld (default): [--interval H]; rdp: [--orders A,B,...] [--series exact|magnitudes]
//	fibergen mechanism --steps N --min-sep B --buffers D [--objective max|mean] [--out FILE.dsl] [--dense=false] [--json]
//	fibergen cache dir|clean
//
// SOURCE is a .dsl file or the name of an optimizer fibergen ships (fiber,
// dp_adamw, ...: package optimizers); what LLVM compiles from it is cached
// per user ($FIBERGEN_CACHE, else ~/.cache/fibergen: package objcache).
//
// Flags may come before or after the files, spelled --name value or
// --name=value (build's output directory: -o DIR); a flag error names the
// flag so. Errors in a .dsl file are shown
// as file:line:col with the source line and a caret; every other error is
// one line. The exit status is 0 on success, 1 on an error in the input and
// 2 on a usage error; no output file is written unless the command succeeds.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/fibergen/fibergen/internal/version"
)

const usage = `usage:
  fibergen --version                     the build: module, commit, Go; the manifest format, noise scheme and C ABI version
  fibergen build SOURCE... [-o DIR] [--params f32|bf16|f16[' stochastic']]
                                         write DIR/<name>/<name>.{go,ll,ptx,json,so} (default DIR: generated),
                                         the kernels for parameters stored as --params (default f32)
  fibergen check SOURCE...               report errors (and warnings); exit 1 if there are errors
  fibergen explain SOURCE [--ir] [--json] [--set name=value ...] [--steps N [--min-sep B]] [--allow-extrapolation] [--allow-unstable] [--host-isa]
                                         the settings checked as run checks them (step 0)
  fibergen run SOURCE --grads G.npy --theta THETA.npy --out OUT.npy
          (--sigma-w2 X | --noise off) [--set name=value ...] [--tensors N,...] [--seed N | --noise-mode secure]
          [--backend go|cpu|ptxsim] [--params P] [--diagnostics] [--no-clamp-warning] [--allow-extrapolation] [--allow-unstable] [--lookahead-out LA.npy] [--state-out NAME=S.npy ...]
  fibergen run SOURCE --example-grads E.npy [--lookahead-grads L.npy] --clip C
          (--noise-multiplier S | --noise off) [--clipped-out CM.npy] --theta THETA.npy --out OUT.npy [...]
  fibergen bench SOURCE|DIR [--n N | --tensors N,...] [--steps K] [--threads T] [--backend cpu|go|cuda] [--noise-mode philox|secure] [--params P] [--json]
                                         time the step against this machine's limit (CPU: STREAM copy and triad)
                                         (DIR: kernels fibergen build wrote, used as they are)
  fibergen privacy epsilon --sigma S RUN [--delta D] [OPTIONS]   the epsilon a run spends
  fibergen privacy sigma --epsilon E RUN [--delta D] [OPTIONS]   the smallest sigma meeting E
  fibergen privacy delta --sigma S --epsilon E RUN [OPTIONS]     the delta of epsilon E at sigma S
          RUN: --sample-rate Q --steps T, or --dataset-size N --batch-size B --epochs E
               (steps = E × ceil(N/B), rounded up; delta defaults to 1/N^1.1)
          OPTIONS: [--sampling poisson|fixed|cyclic] [--accountant pld|rdp] [--json]
                   a noise block's optimizer (cyclic only): --optimizer SOURCE [--set name=value ...]
                   pld (default): [--interval H]; rdp: [--orders A,B,...] [--series exact|magnitudes]
  fibergen mechanism --steps N --min-sep B --buffers D [--objective max|mean] [--out FILE.dsl] [--dense=false] [--json]
                                         design a BLT correlated-noise filter (docs/correlated-noise.md);
                                         --out writes its noise { ... } block, to paste into an optimizer;
                                         for few steps it also computes the optimal dense factorization
                                         (--objective max: up to a minute; --dense=false skips it)
  fibergen cache dir|clean               print or empty the per-user cache of what LLVM compiled
  SOURCE: a .dsl file, or the name of an optimizer fibergen ships (fiber, dp_adamw, ...: optimizers/);
          LLVM compiles it once per user into the cache ($FIBERGEN_CACHE, else ~/.cache/fibergen)
`

// cmdVersion prints the build identity (internal/version).
func cmdVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		return usageError(stderr, "version", "takes no arguments, got %q", args)
	}
	fmt.Fprint(stdout, version.Read())
	return 0
}

func main() {
	// A write to a closed pipe returns EPIPE instead of killing the process,
	// so that `fibergen run --diagnostics | head -1` still writes its files.
	signal.Ignore(syscall.SIGPIPE)
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}

// Main runs the command line args and returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "fibergen: no command (want bench, build, cache, check, explain, mechanism, privacy or run; fibergen help prints the usage)")
		return 2
	}
	commands := map[string]func([]string, io.Writer, io.Writer) int{
		"bench": cmdBench, "build": cmdBuild, "cache": cmdCache, "check": cmdCheck, "explain": cmdExplain, "mechanism": cmdMechanism, "privacy": cmdPrivacy, "run": cmdRun,
	}
	cmd, ok := commands[args[0]]
	switch {
	case args[0] == "help" || args[0] == "-h" || args[0] == "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case args[0] == "version" || args[0] == "--version":
		return cmdVersion(args[1:], stdout, stderr)
	case !ok:
		fmt.Fprintf(stderr, "fibergen: unknown command %q (want bench, build, cache, check, explain, mechanism, privacy or run)\n", args[0])
		return 2
	}
	return cmd(args[1:], stdout, stderr)
}
