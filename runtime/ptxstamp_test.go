package runtime_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/runtime"
)

// TestPTXStamp: the PTX backends refuse a PTX, from a file (Open) or in
// memory (OpenCompiled), whose ABI stamp is missing or is not the
// manifest's — the PTX of another build beside this manifest — before the
// driver sees it; the checked-in PTX, stamped as its manifest says, runs.
func TestPTXStamp(t *testing.T) {
	src := filepath.Join("..", "generated", "fiber", "fiber")
	ptx, err := os.ReadFile(src + ".ptx")
	if err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(src + ".json")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := bytes.Cut(ptx, []byte("\n"))
	if abi, stamped := manifest.PTXStamp(ptx); !ok || !stamped || !bytes.Contains(m, []byte(`"abi_sha256": "`+abi+`"`)) {
		t.Fatalf("generated/fiber/fiber.ptx does not carry the stamp of fiber.json (run make generate)")
	}
	cases := []struct {
		name string
		ptx  []byte
		want string // "": it runs
	}{
		{"its own stamp", ptx, ""},
		{"another build's stamp", manifest.StampPTX(strings.Repeat("0", 64), body), "was not built from the fiber.ll that the manifest of fiber describes (ABI stamp \"000000000000\""},
		{"no stamp", body, "has no ABI stamp on its first line"},
		{"the stamp not first", append(firstLines(body, 3), ptx...), "has no ABI stamp on its first line"},
	}
	for _, c := range cases {
		dir := ptxDir(t, "fiber")
		if err := os.WriteFile(filepath.Join(dir, "fiber.ptx"), c.ptx, 0o644); err != nil {
			t.Fatal(err)
		}
		opened := map[string]func() (*runtime.Optimizer, error){
			"Open": func() (*runtime.Optimizer, error) {
				return runtime.Open(dir, simOptions(t, runtime.Options{Backend: runtime.PTXSim}))
			},
			"OpenCompiled": func() (*runtime.Optimizer, error) {
				return runtime.OpenCompiled(runtime.Compiled{Manifest: m, PTX: c.ptx}, simOptions(t, runtime.Options{Backend: runtime.PTXSim}))
			},
		}
		for how, open := range opened {
			err := firstWrite(t, open)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s, %s: %v", c.name, how, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "rebuild it with fibergen build")):
				t.Errorf("%s, %s: %v, want an error saying %q and to rebuild", c.name, how, err, c.want)
			case c.want != "":
				t.Logf("%s, %s: %v", c.name, how, err)
			}
		}
	}
}

// firstLines returns the first n lines of text, each with its newline.
func firstLines(text []byte, n int) []byte {
	var out []byte
	for range n {
		line, rest, _ := bytes.Cut(text, []byte("\n"))
		out, text = append(append(out, line...), '\n'), rest
	}
	return out
}

// firstWrite opens an optimizer, registers a tensor and writes its
// gradient, which starts the backend, and returns the first error.
func firstWrite(t *testing.T, open func() (*runtime.Optimizer, error)) error {
	t.Helper()
	o, err := open()
	if err != nil {
		return err
	}
	defer o.Close()
	tn, err := o.Register("w", make([]float32, 5))
	if err != nil {
		t.Fatal(err)
	}
	return tn.SetGrad(make([]float32, 5))
}
