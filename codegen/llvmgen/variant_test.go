package llvmgen

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/internal/hostisa"
	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
)

// variantModule is a module of one host function per variant, each adding
// two vectors of 16 floats, targeted as the host kernel's are.
func variantModule(variants []hostisa.Variant) (string, []string) {
	m := llvm.NewModule()
	vec := types.NewVector(16, types.Float)
	var names []string
	for i, v := range variants {
		name := "add_" + v.Name + strings.Repeat("_", i)
		p := llvm.NewParam("p", types.NewPointer(vec))
		f := m.NewFunc(name, types.Void, p)
		targetVariant(f, v)
		b := f.NewBlock("entry")
		x := b.NewLoad(vec, p)
		b.NewStore(b.NewFAdd(x, constant.NewZeroInitializer(vec)), p)
		b.NewRet(nil)
		names = append(names, name)
	}
	return m.String(), names
}

// localToolchain is LLVM 14's tools, or a skip outside CI without them.
func localToolchain(t *testing.T) *Toolchain {
	t.Helper()
	tc, err := FindToolchain()
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	return tc
}

// TestLLCKnowsTheFeatures: opt and llc 14 know every feature and tuning
// name of the x86-64 variants (an unknown one they would ignore, compiling
// for other features than the runtime checks), and the toolchain fails on
// a name they do not know.
func TestLLCKnowsTheFeatures(t *testing.T) {
	tc := localToolchain(t)
	target := hostTargets["amd64"]
	ll, names := variantModule(hostisa.For("amd64"))
	if _, err := tc.hostObject(ll, names, target); err != nil {
		t.Fatalf("the variants do not compile: %v", err)
	}
	for _, bad := range []hostisa.Variant{
		{Name: "feature", Features: []string{"avx2", "avx9"}},
		{Name: "tune", Features: []string{"avx2"}, Tune: "pentium9"},
	} {
		ll, names := variantModule([]hostisa.Variant{bad})
		_, err := tc.hostObject(ll, names, target)
		if err == nil || !strings.Contains(err.Error(), "is not a recognized") {
			t.Errorf("a variant %v compiled: %v, want LLVM's warning as an error", bad, err)
		}
	}
}

// featureProbes are, per x86 feature, a function whose code uses an
// instruction of that feature where LLVM may use it, and that
// instruction: the features a variant's attributes enable, whether
// listed or implied by one listed, show in llc's output.
var featureProbes = []struct{ feature, body, instruction string }{
	{"lzcnt", "define i32 @p_lzcnt(i32 %x) #0 {\n%y = call i32 @llvm.ctlz.i32(i32 %x, i1 false)\nret i32 %y\n}", "lzcnt"},
	{"popcnt", "define i32 @p_popcnt(i32 %x) #0 {\n%y = call i32 @llvm.ctpop.i32(i32 %x)\nret i32 %y\n}", "popcnt"},
	{"bmi", "define i32 @p_bmi(i32 %x, i32 %y) #0 {\n%n = xor i32 %x, -1\n%r = and i32 %n, %y\nret i32 %r\n}", "andn"},
	{"bmi2", "define i32 @p_bmi2(i32 %x, i32 %y) #0 {\n%r = shl i32 %x, %y\nret i32 %r\n}", "shlx"},
	{"movbe", "define i32 @p_movbe(i32* %p) #0 {\n%x = load i32, i32* %p\n%r = call i32 @llvm.bswap.i32(i32 %x)\nret i32 %r\n}", "movbe"},
	{"f16c", "define float @p_f16c(half %x) #0 {\n%y = fpext half %x to float\nret float %y\n}", "vcvtph2ps"},
	{"fma", "define float @p_fma(float %a, float %b, float %c) #0 {\n%y = call float @llvm.fma.f32(float %a, float %b, float %c)\nret float %y\n}", "vfmadd"},
	{"avx512cd", "define void @p_cd(<16 x i32>* %p) #0 {\n%x = load <16 x i32>, <16 x i32>* %p\n%y = call <16 x i32> @llvm.ctlz.v16i32(<16 x i32> %x, i1 false)\nstore <16 x i32> %y, <16 x i32>* %p\nret void\n}", "vplzcntd"},
}

const probeDecls = `declare i32 @llvm.ctlz.i32(i32, i1)
declare <16 x i32> @llvm.ctlz.v16i32(<16 x i32>, i1)
declare i32 @llvm.ctpop.i32(i32)
declare i32 @llvm.bswap.i32(i32)
declare float @llvm.fma.f32(float, float, float)
`

// attributesOf is the function attributes targetVariant gives a host
// function of v, as the module text spells them.
func attributesOf(v hostisa.Variant) string {
	f := llvm.NewFunc("f", types.Void)
	targetVariant(f, v)
	var attrs []string
	for _, a := range f.FuncAttrs {
		attrs = append(attrs, a.String())
	}
	return strings.Join(attrs, " ")
}

// TestVariantsEnableOnlyTheirFeatures compiles the probes with each
// variant's attributes: an instruction of a probed feature appears
// exactly where the variant lists the feature. Before issue 32, avx512's
// x86-64-v4 emitted lzcnt, popcnt, andn, shlx, movbe and vplzcntd, of
// features no check required; a feature LLVM implies from a listed one
// (avx512f: fma, f16c) must be listed, or the runtime would not check it.
func TestVariantsEnableOnlyTheirFeatures(t *testing.T) {
	tc := localToolchain(t)
	for _, v := range hostisa.For("amd64") {
		var b strings.Builder
		fmt.Fprintf(&b, "target triple = %q\n%s", hostTargets["amd64"][0], probeDecls)
		for _, p := range featureProbes {
			b.WriteString(p.body + "\n")
		}
		fmt.Fprintf(&b, "attributes #0 = { nounwind %s }\n", attributesOf(v))
		asm, err := run(tc.LLC, []byte(b.String()), "-O3", "--fp-contract=off")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range featureProbes {
			used := regexp.MustCompile(`(?m)^\s+` + p.instruction).Match(asm)
			if listed := slices.Contains(v.Features, p.feature); used != listed {
				t.Errorf("%s: %s emitted %v, listed %v", v.Name, p.instruction, used, listed)
			}
		}
	}
}
