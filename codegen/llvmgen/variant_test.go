package llvmgen

import (
	"os"
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
