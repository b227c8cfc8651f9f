// Package manifest is the kernel ABI file that fibergen build writes next to
// the kernels, generated/<name>/<name>.json: the buffers and their roles, the
// host scalars and how each is computed (as a DSL expression for people and
// as the optimizer's IR for programs), the noise scheme, the two-point
// observation, the kernel files and entry points, and a hash of the source.
// A runtime needs nothing else — not the .dsl, not LLVM — to run the kernels.
package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	"github.com/fibergen/fibergen/ir"
)

// Format names this version of the file; a runtime refuses any other.
const Format = "fibergen-manifest/1"

// ReduceVersion is the calling convention of the reduction pass (Reduce)
// that this fibergen builds and calls: 2, the pass takes the kept
// gradient's pointer last (decision 127); a manifest without a version is
// 1, whose pass took none.
const ReduceVersion = 2

// ReduceFoldVersion is ReduceVersion's calling convention for a pass one
// of whose terms is a max or a min (Reduce.Combine): a runtime that
// finishes every term as a sum refuses it, not summing maxima. A pass of
// sums alone stays ReduceVersion, its manifest without Combine.
const ReduceFoldVersion = 3

// Manifest is one optimizer's kernel ABI.
type Manifest struct {
	Format       string   `json:"format"`
	Optimizer    string   `json:"optimizer"`
	Source       string   `json:"source"`        // the .dsl file name
	SourceSHA256 string   `json:"source_sha256"` // of the .dsl file's bytes
	Buffers      []Buffer `json:"buffers"`
	Scalars      []Scalar `json:"scalars"`
	RNG          RNG      `json:"rng"`
	Observe      *Observe `json:"observe,omitempty"`
	// NoiseFilter is a noise block's filter; absent without one.
	NoiseFilter *NoiseFilter `json:"noise_filter,omitempty"`
	Kernels     Kernels      `json:"kernels"`
	// IR is the optimizer's IR (ir.Func's JSON form): the runtime computes
	// the host scalars, initializes the states and checks hypers and filter
	// stability with it, and can interpret the step where no kernel runs.
	IR json.RawMessage `json:"ir"`
}

// Buffer is one array of the kernels, in ABI order: float32, or a state
// stored as a 16-bit type (DType).
type Buffer struct {
	Name  string `json:"name"`
	Role  string `json:"role"`  // "parameters", "gradient", "state" or NoiseBufferRole
	DType string `json:"dtype"` // "float32", or a state's "bfloat16" or "float16" (ir.Storage)
	// Rounding is "stochastic" for a narrow buffer whose stores round
	// stochastically; absent for float32 and to nearest.
	Rounding string `json:"rounding,omitempty"`
	Access   string `json:"access"` // "read", "write" (the look-ahead point) or "read-write"
	Init     string `json:"init,omitempty"`
	// Start is what the step reads for the state at step 0 instead of its
	// buffer (`state m = g`: "g"); the buffer holds Init until then.
	Start string `json:"start,omitempty"`
}

// NoiseBufferRole is the role of a noise block's buffer (docs/dsl.md,
// "Correlated noise"): a state of the kernels, checkpointed and sharded as
// the others are, which a binding never shows (it holds past noise).
const NoiseBufferRole = "noise buffer"

// Scalar is one float32 kernel argument after the buffers.
type Scalar struct {
	Name    string `json:"name"` // the generated Go field: S0, S1, ..., SigmaW
	Expr    string `json:"expr"` // what it computes, in the DSL
	PerStep bool   `json:"per_step"`
}

// RNG describes the in-kernel noise.
type RNG struct {
	Scheme  string `json:"scheme"` // rng.Version
	Site    uint32 `json:"site"`
	Counter string `json:"counter"`
	Doc     string `json:"doc"`
}

// NoiseFilter is a noise block's filter at the default hypers
// (docs/correlated-noise.md): the first NoiseCoefficients Toeplitz
// coefficients of the noise w_t = Σ c_{t−s} z_s (ir.Func.NoiseCoefficients)
// and of its inverse, the strategy C of the factorization
// (StrategyCoefficients). The sensitivity and the errors depend on the
// run's participation: explain prints them for any, and the runtime's
// budget computes its run's (docs/privacy.md).
type NoiseFilter struct {
	Buffers      []string  `json:"buffers"`
	Coefficients []float64 `json:"coefficients"`
	Strategy     []float64 `json:"strategy"`
}

// NoiseCoefficients is how many coefficients of each NoiseFilter holds.
const NoiseCoefficients = 16

// Observe is the two-point observation the trainer forms gradients with.
type Observe struct {
	Kind string            `json:"kind"`
	Args map[string]string `json:"args"` // argument → DSL expression of the hypers and t
}

// Kernels names the kernel files and entry points.
type Kernels struct {
	LL           string `json:"ll"`
	PTX          string `json:"ptx"`
	PTXTarget    string `json:"ptx_target"`
	StepKernel   string `json:"step_kernel"`
	StepABI      string `json:"step_abi"`
	HostFunction string `json:"host_function"`
	HostABI      string `json:"host_abi"`
	SharedObject string `json:"shared_object"` // built on the user's machine, not checked in
	ABI          string `json:"abi_sha256"`    // the module's ABI stamp, which the shared object exports
	ABISymbol    string `json:"abi_symbol"`
	// Privatize names the per-example clipping entry points; absent in a
	// manifest built before they existed.
	Privatize *Privatize `json:"privatize,omitempty"`
	// Diagnostics names the entry points of the declared diagnostics
	// (docs/kernels.md, "Diagnostics"); absent when there are none.
	Diagnostics []Diagnostic `json:"diagnostics,omitempty"`
	// Reduce names the entry points of the reduction pass that runs before
	// the step of an optimizer with per-tensor reductions (docs/kernels.md,
	// "Reductions"); absent without them.
	Reduce *Reduce `json:"reduce,omitempty"`
}

// Reduce names the entry points of the reduction pass: they take the
// step's buffers, the reduce block's scalars (Scalars, then sigma_w) and
// the step's noise, read Reads before the step (g privatized as the step
// privatizes it) and write one float32 partial of each term per chunk of
// Chunk coordinates of a tensor, term-major; a term's total is its
// partials summed in float64 in chunk order, or for a term whose Combine is
// max (min) their maximum (minimum) by the DSL's max (min), in chunk order
// from -Inf (+Inf). Given a place for it (version 2), they also write the
// privatized g, which the step then reads.
type Reduce struct {
	// Version is the pass's calling convention (ReduceVersion, or
	// ReduceFoldVersion with Combine); a runtime refuses any other.
	Version int      `json:"version"`
	Terms   []string `json:"terms"` // r0, r1, …: what the step's reductions sum (max, min)
	// Combine is each term's combine, "sum", "max" or "min", where one is
	// not a sum (ReduceFoldVersion); absent, every term is a sum.
	Combine      []string `json:"combine,omitempty"`
	Reads        []string `json:"reads"`   // the buffers it reads
	Scalars      []string `json:"scalars"` // its host scalars, then sqrt(sigma_w2)
	Chunk        int      `json:"chunk"`
	Kernel       string   `json:"kernel"`
	KernelABI    string   `json:"kernel_abi"`
	HostFunction string   `json:"host_function"`
	HostABI      string   `json:"host_abi"`
}

// Diagnostic names the entry points of one diagnostic, e.g. clamp_mass:
// they take the step's buffers and scalars, read the states Reads after a
// step and write one float32 partial of each sum (num, den) per chunk of
// Chunk coordinates; the value is Σ num / Σ den in float64, chunk order.
type Diagnostic struct {
	Kind         string   `json:"kind"`
	Args         []string `json:"args"`  // the step's names it measures, as declared
	Reads        []string `json:"reads"` // the states it reads
	Chunk        int      `json:"chunk"`
	Kernel       string   `json:"kernel"` // the NVPTX kernel, in the PTX file
	KernelABI    string   `json:"kernel_abi"`
	HostFunction string   `json:"host_function"` // in the shared object, with an _avx2 twin on amd64
	HostABI      string   `json:"host_abi"`
}

// Privatize names the entry points that clip per-example gradients and
// write their sum over a divisor, the expected batch size, into the
// gradient buffer (docs/kernels.md, "Privatize"), each list in the order
// they run: norms, scales, sum.
type Privatize struct {
	Chunk         int      `json:"chunk"`   // coordinates per chunk of the norms reduction
	Kernels       []string `json:"kernels"` // the NVPTX kernels, in the PTX file
	KernelABIs    []string `json:"kernel_abis"`
	HostFunctions []string `json:"host_functions"` // in the shared object, each with an _avx2 twin on amd64
	HostABI       string   `json:"host_abi"`
	// HostPiece is the host function that adds a piece of a chunk, one
	// tensor's coordinates in it, to the norms' lane accumulators, for
	// per-example gradients read in place (docs/kernels.md, "Privatize in
	// place"); absent in a manifest built before it existed.
	HostPiece    string `json:"host_piece,omitempty"`
	HostPieceABI string `json:"host_piece_abi,omitempty"`
	// TwoSets says that the optimizer observes two points: mode 1 mixes
	// u = a·look + (1−a)·cur. Without it only mode 0 (cur alone) applies.
	TwoSets bool `json:"two_sets"`
}

// Read reads and checks a manifest file.
func Read(path string) (*Manifest, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	m, err := Decode(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, data, nil
}

// WantVersion is the version this fibergen builds and calls a pass of r's
// combines with: ReduceFoldVersion where r says how its terms combine,
// else ReduceVersion.
func (r *Reduce) WantVersion() int {
	if len(r.Combine) > 0 {
		return ReduceFoldVersion
	}
	return ReduceVersion
}

// Decode decodes and checks a manifest's bytes.
func Decode(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("not a fibergen manifest: %w", err)
	}
	if m.Format != Format {
		return nil, fmt.Errorf("manifest format %q, this fibergen reads %q (rebuild with fibergen build)", m.Format, Format)
	}
	if r := m.Kernels.Reduce; r != nil && r.Version != r.WantVersion() {
		return nil, fmt.Errorf("manifest of %s: its reduction pass is version %d, this fibergen calls version %d (rebuild with fibergen build)", m.Optimizer, max(r.Version, 1), r.WantVersion())
	}
	return &m, nil
}

// Func decodes the manifest's IR.
func (m *Manifest) Func() (*ir.Func, error) {
	fn, err := ir.UnmarshalFunc(m.IR)
	if err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", m.Optimizer, err)
	}
	if fn.Name != m.Optimizer {
		return nil, fmt.Errorf("manifest of %s holds the IR of %s", m.Optimizer, fn.Name)
	}
	return fn, nil
}

// Hash is the hex SHA-256 of a manifest file's bytes: what a checkpoint
// records to refuse a resume under another build.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Encode returns the manifest as indented JSON with a final newline.
func (m *Manifest) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
