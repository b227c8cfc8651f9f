package llvmgen_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/manifest"
)

// TestSignaturesMatchModule reads every entry point's signature as the
// manifest gives it and the function the module defines under its name:
// the same number of parameters, and each C type lowered to the LLVM type
// the ABI says (docs/kernels.md).
func TestSignaturesMatchModule(t *testing.T) {
	for _, name := range []string{"fiber", "dp_sgd", "doppler"} {
		u := compile(t, "../../optimizers/"+name+".dsl")
		for symbol, abi := range signatures(u.Module.Kernels) {
			def := regexp.MustCompile(`(?m)^define (?:ptx_kernel )?void @` + regexp.QuoteMeta(symbol) + `\((.*)\) `).FindStringSubmatch(u.Module.LL)
			if def == nil {
				t.Errorf("%s: the module defines no %s", name, symbol)
				continue
			}
			checkParams(t, symbol, cParams(abi), llParams(def[1]))
		}
	}
}

// signatures maps each entry point of k to its signature; the privatize
// host functions share one, written with <phase>.
func signatures(k manifest.Kernels) map[string]string {
	out := map[string]string{k.StepKernel: k.StepABI, k.HostFunction: k.HostABI}
	for i, kernel := range k.Privatize.Kernels {
		out[kernel] = k.Privatize.KernelABIs[i]
		phase := strings.TrimPrefix(kernel, strings.TrimSuffix(k.StepKernel, "_step")+"_privatize_")
		out[k.Privatize.HostFunctions[i]] = strings.Replace(k.Privatize.HostABI, "<phase>", phase, 1)
	}
	for _, d := range k.Diagnostics {
		out[d.Kernel], out[d.HostFunction] = d.KernelABI, d.HostABI
	}
	return out
}

// cParams are the C types of a signature's parameters, struct bodies cut
// to "struct".
func cParams(abi string) []string {
	abi = regexp.MustCompile(`struct \w+ \{[^}]*\}`).ReplaceAllString(abi, "struct")
	list := abi[strings.Index(abi, "(")+1 : strings.LastIndex(abi, ")")]
	var out []string
	for _, p := range strings.Split(list, ", ") {
		name := regexp.MustCompile(`\w+$`).FindString(p)
		out = append(out, strings.TrimSpace(strings.TrimSuffix(p, name)))
	}
	return out
}

// llParams are the LLVM types of a definition's parameters.
func llParams(list string) []string {
	list = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(list, "struct")
	var out []string
	for _, p := range strings.Split(list, ", ") {
		out = append(out, strings.Fields(p)[0])
	}
	return out
}

// lowering is how the ABI's C types lower to LLVM's.
var lowering = map[string]string{
	"float *": "float*", "const float *": "float*", "float *const *": "float**", "float": "float",
	"u64": "i64", "int64_t": "i64", "u32": "i32", "f64": "double", "const struct *": "struct*",
}

func checkParams(t *testing.T, symbol string, c, ll []string) {
	t.Helper()
	if len(c) != len(ll) {
		t.Errorf("%s: the signature has %d parameters %q, the module's function %d %q", symbol, len(c), c, len(ll), ll)
		return
	}
	for i := range c {
		if lowering[c[i]] != ll[i] {
			t.Errorf("%s parameter %d: C type %q, LLVM type %q", symbol, i, c[i], ll[i])
		}
	}
}
