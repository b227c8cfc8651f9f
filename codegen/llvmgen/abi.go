package llvmgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/ir"
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"
)

// This file is the kernels' ABI (docs/kernels.md), written once. Every entry
// point is a signature — its parameters, each with its name and C type in
// the ABI and the LLVM type it lowers to — and the structs the host
// functions take are lists of fields. The emitters build the LLVM functions
// and struct types from these lists, and Module.Kernels renders the same
// lists as the signatures of the manifest, so the two cannot differ.

// ctype is a C type of the ABI and the LLVM type it lowers to. The NVPTX
// kernels' parameters are written as PTX sees them (float *, u64, u32, f64),
// the host functions' in C (int64_t, const float *).
type ctype struct {
	c  string
	ll types.Type
}

// The C types of the parameters.
var (
	cFloat    = ctype{"float", f32}
	cFloatPtr = ctype{"float *", f32Ptr}
	cU16Ptr   = ctype{"u16 *", i16Ptr} // a bfloat16 buffer
	cU64      = ctype{"u64", i64}
	cU32      = ctype{"u32", i32}
	cF64      = ctype{"f64", types.Double}
	cBuffers  = ctype{"float *const *", types.NewPointer(f32Ptr)}
	cScalars  = ctype{"const float *", f32Ptr}
	cInt64    = ctype{"int64_t", i64}
)

// cfield is a field of a struct of the ABI; an array's name carries its
// length, "key[4]", and its type is the element's C type and the array's
// LLVM type.
type cfield struct {
	name string
	typ  ctype
}

// ident is the field's name without an array's length.
func (f cfield) ident() string {
	name, _, _ := strings.Cut(f.name, "[")
	return name
}

// cstruct is a struct that a host function takes a pointer to.
type cstruct struct {
	tag    string
	fields []cfield
	ll     *types.StructType
}

func newStruct(tag string, fields ...cfield) cstruct {
	var ts []types.Type
	for _, f := range fields {
		ts = append(ts, f.typ.ll)
	}
	return cstruct{tag: tag, fields: fields, ll: types.NewStruct(ts...)}
}

// rangeStruct is the step host function's range: the coordinates [lo, hi)
// of the buffers, whose coordinate 0 has global index offset, and the
// noise of the step, noise its rng.Mode (0 none; 2 the secure scheme's
// draw under key, snapped; otherwise sqrt(sigma_w2)·z added to g, z
// Philox's Gaussian of (seed, step, global index)).
var rangeStruct = newStruct("fibergen_range",
	cfield{"lo", cInt64}, cfield{"hi", cInt64}, cfield{"offset", cInt64},
	cfield{"seed", ctype{"uint64_t", i64}}, cfield{"step", ctype{"uint32_t", i32}}, cfield{"noise", ctype{"uint32_t", i32}},
	cfield{"key[4]", ctype{"uint64_t", types.NewArray(4, i64)}})

// privatizeStruct is the privatize host functions' only argument: the
// per-example rows cur and look ([batch][n]; look is read in mode 1 only,
// u = a·look + b·cur), the norm partials ([batch][chunks(n)]), the scales
// ([batch]) and out ([n]); [lo, hi) are the tasks of norms
// (example·chunks(n) + chunk), the examples of scales, the coordinates of
// sum; clip is C, divisor the expected batch size.
var privatizeStruct = newStruct("fibergen_privatize",
	cfield{"cur", cScalars}, cfield{"look", cScalars},
	cfield{"partials", cFloatPtr}, cfield{"scales", cFloatPtr}, cfield{"out", cFloatPtr},
	cfield{"batch", cInt64}, cfield{"n", cInt64}, cfield{"lo", cInt64}, cfield{"hi", cInt64},
	cfield{"clip", ctype{"double", types.Double}},
	cfield{"a", cFloat}, cfield{"b", cFloat}, cfield{"divisor", cFloat}, cfield{"mode", ctype{"uint32_t", i32}})

// decl is the struct's C declaration, with runs of fields of one type in
// one declarator list: struct t { int64_t lo, hi; ... }.
func (s cstruct) decl() string {
	var b strings.Builder
	b.WriteString("struct " + s.tag + " {")
	for i, f := range s.fields {
		switch {
		case i > 0 && f.typ == s.fields[i-1].typ:
			b.WriteString(", " + pointerStars(f.typ.c) + f.name)
		default:
			if i > 0 {
				b.WriteString(";")
			}
			b.WriteString(" " + declare(f.typ.c, f.name))
		}
	}
	return b.String() + "; }"
}

// ptr is a parameter type pointing at the struct: const struct t {...} *.
func (s cstruct) ptr() ctype {
	return ctype{"const " + s.decl() + " *", types.NewPointer(s.ll)}
}

// load emits the load of the named field of the struct at p.
func (s cstruct) load(b *llvm.Block, p *llvm.Param, name string) *llvm.InstLoad {
	i := slices.IndexFunc(s.fields, func(f cfield) bool { return f.ident() == name })
	t := s.ll.Fields[i]
	ld := b.NewLoad(t, b.NewGetElementPtr(s.ll, p, i32c(0), i32c(uint32(i))))
	ld.Align = llvm.Align(sizeOf(t))
	return ld
}

// sizeOf is the alignment in bytes of a field's type: its size for a
// scalar or pointer, 8 for the 64-bit words of an array (key[4]).
func sizeOf(t types.Type) int {
	switch t {
	case i32, f32:
		return 4
	}
	return 8
}

// declare writes a declaration of name with C type c: "float *p", "u64 n".
func declare(c, name string) string {
	if strings.HasSuffix(c, "*") {
		return c + name
	}
	return c + " " + name
}

// pointerStars is the stars a further declarator of type c repeats:
// "const float *cur, *look".
func pointerStars(c string) string {
	return strings.Repeat("*", len(c)-len(strings.TrimRight(c, "*")))
}

// cparam is one parameter of an entry point.
type cparam struct {
	name   string // in the ABI
	typ    ctype
	llName string // the LLVM parameter's name, when it is not name
	attrs  []llvm.ParamAttribute
}

func param(name string, t ctype) cparam { return cparam{name: name, typ: t} }

// noalias marks a pointer that no other parameter's range overlaps, and
// readonly one the entry point never writes through (the kernels then load
// it through the non-coherent cache).
func (p cparam) noalias(readonly bool) cparam {
	p.attrs = []llvm.ParamAttribute{enum.ParamAttrNoAlias}
	if readonly {
		p.attrs = append(p.attrs, enum.ParamAttrReadOnly)
	}
	return p
}

// bufferParams are the buffers' pointers (theta, g, the states; "p.NAME"
// in LLVM), noalias, readonly where readonly says.
func (k *kernel) bufferParams(readonly func(ir.Buffer) bool) []cparam {
	var out []cparam
	for _, b := range k.Buffers {
		t := cFloatPtr
		if b.Storage.Narrow() {
			t = cU16Ptr
		}
		p := param(b.Name, t)
		p.llName = "p." + b.Name
		out = append(out, p.noalias(readonly(b)))
	}
	return out
}

// scalarParams are the host scalars S0, S1, ... and sigma_w, the standard
// deviation of the noise ("s.I" in LLVM).
func (k *kernel) scalarParams() []cparam { return scalarParamsNamed(len(k.Scalars), "S", "s") }

// scalarParamsNamed are n float parameters <prefix>0, <prefix>1, … ("<ll>.i"
// in LLVM), the last sigma_w.
func scalarParamsNamed(n int, prefix, ll string) []cparam {
	out := make([]cparam, n)
	for i := range out {
		name := fmt.Sprintf("%s%d", prefix, i)
		if i == ir.SigmaWScalar(n) {
			name = "sigma_w"
		}
		out[i] = cparam{name: name, typ: cFloat, llName: fmt.Sprintf("%s.%d", ll, i)}
	}
	return out
}

// kernelArgs splits the parameters of a kernel whose signature begins with
// bufferParams and scalarParams (the step's and the diagnostics'): the
// buffers' pointers, every scalar (sqrt(sigma_w2) last), and the
// parameters after them.
func (k *kernel) kernelArgs(f *llvm.Func) (a args, rest []*llvm.Param) {
	nb, ns := len(k.Buffers), len(k.Scalars)
	for _, p := range f.Params[:nb] {
		a.ptrs = append(a.ptrs, p)
	}
	for _, p := range f.Params[nb : nb+ns] {
		a.scalars = append(a.scalars, p)
	}
	return a, f.Params[nb+ns:]
}

// signature is an entry point: an NVPTX kernel or a host function.
type signature struct {
	symbol string
	kernel bool
	params []cparam
}

// String writes the signature as the manifest and docs/kernels.md do.
func (s signature) String() string {
	head := "void "
	if s.kernel {
		head = ".entry "
	}
	parts := make([]string, len(s.params))
	for i, p := range s.params {
		parts[i] = declare(p.typ.c, p.name)
	}
	return head + s.symbol + "(" + strings.Join(parts, ", ") + ")"
}

// newParams makes the LLVM parameters of one function of the signature.
func (s signature) newParams() []*llvm.Param {
	out := make([]*llvm.Param, len(s.params))
	for i, p := range s.params {
		name := p.llName
		if name == "" {
			name = p.name
		}
		out[i] = llvm.NewParam(name, p.typ.ll)
		out[i].Attrs = append(out[i].Attrs, p.attrs...)
	}
	return out
}

// newEntry adds the function of s to the module: an NVPTX kernel, or an
// exported host function.
func (k *kernel) newEntry(s signature, symbol string) (*llvm.Func, *llvm.Block) {
	f := k.m.NewFunc(symbol, types.Void, s.newParams()...)
	f.FuncAttrs = append(f.FuncAttrs, enum.FuncAttrNoUnwind)
	if s.kernel {
		f.CallingConv = enum.CallingConvPTXKernel
	}
	return f, f.NewBlock("entry")
}

// targetVariant compiles the host function f for the variant v: with
// exactly v's LLVM target features (the ones the runtime checks CPUID
// for, hostisa) and its scheduling model (variantAttrs).
func targetVariant(f *llvm.Func, v hostisa.Variant) {
	for _, a := range variantAttrs(v) {
		f.FuncAttrs = append(f.FuncAttrs, a)
	}
}

// variantAttrs are the function attributes of a host function compiled
// for the variant v: its LLVM target features, its scheduling model, and,
// for a variant with 512-bit registers, the order to use them: LLVM
// otherwise splits every 512-bit vector in two on the CPUs its AVX-512
// tuning is for.
func variantAttrs(v hostisa.Variant) []llvm.AttrPair {
	var out []llvm.AttrPair
	if len(v.Features) > 0 {
		out = append(out, llvm.AttrPair{Key: "target-features", Value: v.TargetFeatures()})
	}
	if v.Tune != "" {
		out = append(out, llvm.AttrPair{Key: "tune-cpu", Value: v.Tune})
	}
	if v.VectorBits > 256 {
		width := strconv.Itoa(v.VectorBits)
		out = append(out, llvm.AttrPair{Key: "min-legal-vector-width", Value: width}, llvm.AttrPair{Key: "prefer-vector-width", Value: width})
	}
	return out
}

// emitHostVariants emits the host function of s once per instruction-set
// variant (hostisa.All), as <symbol><variant suffix> for the variant's features,
// each calling inner(variant) with its arguments: the loops live in the
// always-inlined inner functions, and each entry point gets its own copy
// for its target. The same IEEE operations run on every variant, so all
// compute the same bits.
func (k *kernel) emitHostVariants(s signature, inner func(hostisa.Variant) *llvm.Func) {
	for _, v := range hostisa.All() {
		f, b := k.newEntry(s, s.symbol+v.Suffix)
		targetVariant(f, v)
		var args []value.Value
		for _, p := range f.Params {
			args = append(args, p)
		}
		b.NewCall(inner(v), args...)
		b.NewRet(nil)
	}
}

// sameLoops is the inner function of a host function whose loops are the
// same on every variant.
func sameLoops(f *llvm.Func) func(hostisa.Variant) *llvm.Func {
	return func(hostisa.Variant) *llvm.Func { return f }
}
