package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fibergen/fibergen/codegen/cuda"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/rng"
)

// buildManifest describes u's kernels for a runtime (package manifest).
func buildManifest(u *Unit) ([]byte, error) {
	fn, k := u.Func, u.Kernels
	sum := sha256.Sum256(u.Src)
	irJSON, err := json.Marshal(fn)
	if err != nil {
		return nil, err
	}
	m := &manifest.Manifest{
		Format: manifest.Format, Optimizer: fn.Name,
		Source: filepath.Base(u.Path), SourceSHA256: hex.EncodeToString(sum[:]),
		Buffers: manifestBuffers(fn, k), Scalars: manifestScalars(fn),
		RNG: manifest.RNG{Scheme: rng.Version, Site: rng.GradientSite,
			Counter: "Philox4x32-10, key (seed lo, seed hi), counter (element/4 lo, element/4 hi, step, site)",
			Doc:     "docs/noise.md"},
		Observe: manifestObserve(fn),
		Kernels: manifest.Kernels{
			LL: fn.Name + ".ll", PTX: fn.Name + ".ptx", PTXTarget: "sm_80",
			StepKernel: k.StepKernel(), StepABI: stepABI(k),
			HostFunction: k.HostFunc(), HostABI: "void " + k.HostFunc() + "(float *const *buffers, const float *scalars, const struct fibergen_range { int64_t lo, hi, offset; uint64_t seed; uint32_t step, noise; } *r)",
			SharedObject: fn.Name + ".so", ABI: k.ABI, ABISymbol: k.ABISymbol(),
			Privatize: manifestPrivatize(fn, k), Diagnostics: manifestDiagnostics(fn, k),
		},
		IR: irJSON,
	}
	return m.Encode()
}

func manifestBuffers(fn *ir.Func, k *cuda.Kernels) []manifest.Buffer {
	inits := map[string]string{}
	for _, st := range fn.Init.Stores() {
		inits[st.Name] = ir.ExprString(st.Args[0])
	}
	var out []manifest.Buffer
	for _, b := range k.Buffers {
		mb := manifest.Buffer{Name: b.Name, Role: "state", DType: "float32", Access: "read-write", Init: inits[b.Name]}
		switch b.Name {
		case "theta":
			mb.Role = "parameters"
		case "g":
			mb.Role = "gradient"
		}
		switch {
		case b.ReadOnly:
			mb.Access = "read"
		case b.WriteOnly:
			mb.Access = "write"
		}
		out = append(out, mb)
	}
	return out
}

func manifestScalars(fn *ir.Func) []manifest.Scalar {
	var out []manifest.Scalar
	for i, v := range ir.HostScalars(fn.Step) {
		out = append(out, manifest.Scalar{Name: fmt.Sprintf("S%d", i), Expr: ir.ExprString(v), PerStep: ir.DependsOnStep(v)})
	}
	return append(out, manifest.Scalar{Name: "SigmaW", Expr: "sqrt(sigma_w2)", PerStep: true})
}

func manifestObserve(fn *ir.Func) *manifest.Observe {
	if fn.Observe == nil {
		return nil
	}
	o := &manifest.Observe{Kind: fn.Observe.Kind, Args: map[string]string{}}
	for _, st := range fn.ObsArgs.Stores() {
		o.Args[st.Name] = ir.ExprString(st.Args[0])
	}
	return o
}

// stepABI is the step kernel's signature in PTX terms.
func stepABI(k *cuda.Kernels) string {
	s := ".entry " + k.StepKernel() + "("
	for _, b := range k.Buffers {
		s += "float *" + b.Name + ", "
	}
	for i := range k.Scalars[:len(k.Scalars)-1] {
		s += fmt.Sprintf("float S%d, ", i)
	}
	return s + "float sigma_w, u64 n, u64 offset, u64 seed, u32 step, u32 noise)"
}

// privatizeHostABI is the signature of every privatize host function.
const privatizeHostABI = "void %s(const struct fibergen_privatize { const float *cur, *look; float *partials, *scales, *out; " +
	"int64_t batch, n, lo, hi; double clip; float a, b, divisor; uint32_t mode; } *p)"

// privatizeKernelABIs are the privatize kernels' signatures in PTX terms,
// by phase.
var privatizeKernelABIs = map[string]string{
	"norms":  "(float *cur, float *look, float *partials, u64 batch, u64 n, float a, float b, u32 mode)",
	"scales": "(float *partials, float *scales, u64 batch, u64 nchunks, f64 clip)",
	"sum":    "(float *cur, float *look, float *scales, float *out, u64 batch, u64 n, float a, float b, float divisor, u32 mode)",
}

func manifestPrivatize(fn *ir.Func, k *cuda.Kernels) *manifest.Privatize {
	p := &manifest.Privatize{Chunk: cuda.ReduceChunk, HostABI: fmt.Sprintf(privatizeHostABI, k.Name+"_privatize_<phase>_cpu"),
		TwoSets: fn.Observe != nil && fn.Observe.Kind == "two_point"}
	for _, phase := range cuda.PrivatizePhases {
		p.Kernels = append(p.Kernels, k.PrivatizeKernel(phase))
		p.KernelABIs = append(p.KernelABIs, ".entry "+k.PrivatizeKernel(phase)+privatizeKernelABIs[phase])
		p.HostFunctions = append(p.HostFunctions, k.PrivatizeHostFunc(phase))
	}
	return p
}

// manifestDiagnostics names the entry points of fn's diagnostics.
func manifestDiagnostics(fn *ir.Func, k *cuda.Kernels) []manifest.Diagnostic {
	var out []manifest.Diagnostic
	for _, d := range fn.Diags {
		kernel, host := k.DiagKernel(d.Kind), k.DiagHostFunc(d.Kind)
		abi := strings.TrimSuffix(stepABI(k), "u64 n, u64 offset, u64 seed, u32 step, u32 noise)") + "u64 n, float *num, float *den)"
		out = append(out, manifest.Diagnostic{Kind: d.Kind, Args: d.Args, Reads: d.Reads(fn), Chunk: cuda.ReduceChunk,
			Kernel: kernel, KernelABI: strings.Replace(abi, k.StepKernel(), kernel, 1),
			HostFunction: host, HostABI: "void " + host + "(float *const *buffers, const float *scalars, int64_t n, int64_t lo, int64_t hi, float *num, float *den)"})
	}
	return out
}
