package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/rng"
)

// New describes the kernels k that fibergen generated from fn (optimized,
// as the code generators take it), compiled from src read from path; k
// holds what the code generator wrote (the entry points and their
// signatures, the ABI stamp), New adds the files' names in the layout of
// fibergen build (<name>.ll, <name>.ptx, <name>.so next to <name>.json).
func New(fn *ir.Func, path string, src []byte, k Kernels) (*Manifest, error) {
	irJSON, err := json.Marshal(fn)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(src)
	k.LL, k.PTX, k.SharedObject = fn.Name+".ll", fn.Name+".ptx", fn.Name+".so"
	return &Manifest{
		Format: Format, Optimizer: fn.Name,
		Source: filepath.Base(path), SourceSHA256: hex.EncodeToString(sum[:]),
		Buffers: buffers(fn), Scalars: scalars(fn),
		RNG:     RNG{Scheme: rng.Version, Site: rng.GradientSite, Counter: rng.CounterLayout, Doc: "docs/noise.md"},
		Observe: observe(fn), NoiseFilter: noiseFilter(fn), Kernels: k, IR: irJSON,
	}, nil
}

// noiseFilter describes fn's noise filter at its default hypers, nil
// without a noise block.
func noiseFilter(fn *ir.Func) *NoiseFilter {
	if fn.Noise == nil {
		return nil
	}
	h := fn.DefaultHypers()
	return &NoiseFilter{Buffers: fn.NoiseBuffers(), Coefficients: fn.NoiseCoefficients(h, NoiseCoefficients),
		Strategy: fn.StrategyCoefficients(h, NoiseCoefficients)}
}

// buffers describes the arrays of ir.Buffers with their roles and the
// states' initial values.
func buffers(fn *ir.Func) []Buffer {
	inits := map[string]string{}
	for _, st := range fn.Init.Stores() {
		inits[st.Name] = ir.ExprString(st.Args[0])
	}
	var out []Buffer
	for _, b := range ir.Buffers(fn) {
		mb := Buffer{Name: b.Name, Role: "state", DType: b.Storage.DType.Name(), Access: "read-write", Init: inits[b.Name]}
		if b.Storage.Stochastic {
			mb.Rounding = lang.Stochastic
		}
		if start := ir.StartOf(fn, b.Name); start != nil {
			mb.Start = ir.ExprString(start)
		}
		switch {
		case b.Name == ir.ThetaName:
			mb.Role = "parameters"
		case b.Name == ir.GradName:
			mb.Role = "gradient"
		case slices.Contains(fn.NoiseBuffers(), b.Name):
			mb.Role = NoiseBufferRole
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

// scalars describes the kernels' scalar arguments: the step's host scalars,
// then sigma_w.
func scalars(fn *ir.Func) []Scalar {
	var out []Scalar
	for i, v := range ir.HostScalars(fn.Step) {
		out = append(out, Scalar{Name: fmt.Sprintf("S%d", i), Expr: ir.ExprString(v), PerStep: ir.DependsOnStep(v)})
	}
	return append(out, Scalar{Name: "SigmaW", Expr: "sqrt(sigma_w2)", PerStep: true})
}

// observe describes the observation's arguments, nil without one.
func observe(fn *ir.Func) *Observe {
	if fn.Observe == nil {
		return nil
	}
	o := &Observe{Kind: fn.Observe.Kind, Args: map[string]string{}}
	for _, st := range fn.ObsArgs.Stores() {
		o.Args[st.Name] = ir.ExprString(st.Args[0])
	}
	return o
}
