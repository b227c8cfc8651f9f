package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/runtime/npy"
)

// moduleRoot is the repository root, the parent of this package's directory.
var moduleRoot string

// fibergenBin is the fibergen binary TestMain builds; fibergenErr says why
// it could not be built.
var (
	fibergenBin string
	fibergenErr error
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		fmt.Fprintf(os.Stderr, "tests: cannot find the module root: %v\n", err)
		return 1
	}
	moduleRoot = root
	dir, err := os.MkdirTemp("", "fibergen-tests-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Setenv("FIBERGEN_STATE_DIR", filepath.Join(dir, "state")) // the resume record of these tests' own
	fibergenBin, fibergenErr = buildFibergen(dir)
	return m.Run()
}

// buildFibergen builds cmd/fibergen into dir.
func buildFibergen(dir string) (string, error) {
	bin := filepath.Join(dir, "fibergen")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/fibergen")
	cmd.Dir = moduleRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/fibergen: %v\n%s", err, out)
	}
	return bin, nil
}

// compile compiles DSL source as the CLI does (pipeline.Compile); path
// names it in messages and in the generated code. Its errors come as one.
func compile(path string, src []byte) (*pipeline.Unit, error) {
	u, errs, err := pipeline.Compile(path, src)
	if len(errs) > 0 {
		return nil, errs.Err()
	}
	return u, err
}

// mustCompile is compile, the test failing on an error.
func mustCompile(t testing.TB, path string, src []byte) *pipeline.Unit {
	t.Helper()
	u, err := compile(path, src)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return u
}

// mustCompileFileFor compiles the .dsl file at path for parameters stored
// as params (pipeline.CompileFor).
func mustCompileFileFor(t testing.TB, path string, params ir.Storage) *pipeline.Unit {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u, errs, err := pipeline.CompileFor(path, src, params)
	if len(errs) > 0 || err != nil {
		t.Fatalf("%s: %v %v", path, errs, err)
	}
	return u
}

// mustCompileFile compiles the .dsl file at path.
func mustCompileFile(t testing.TB, path string) *pipeline.Unit {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return mustCompile(t, path, src)
}

// generatedManifest reads the checked-in manifest of the optimizer name
// (generated/NAME/NAME.json): the names of its entry points among its facts.
func generatedManifest(t testing.TB, name string) *manifest.Manifest {
	t.Helper()
	m, _, err := manifest.Read(repoPath("generated", name, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// repoPath returns the absolute path of a file in the repository.
func repoPath(elem ...string) string {
	return filepath.Join(append([]string{moduleRoot}, elem...)...)
}

// runFibergen runs `fibergen run dsl` with --noise off (or with noise, the
// flags in its place) over theta [n] and grads [T*n] and returns the
// output file's bytes and the decoded theta.
func runFibergen(t *testing.T, dsl string, theta, grads []float32, sigmaW2 float64, sets []setting, noise ...string) ([]byte, []float32) {
	t.Helper()
	if fibergenErr != nil {
		t.Fatal(fibergenErr)
	}
	dir := t.TempDir()
	n := len(theta)
	rows := 0
	if n > 0 {
		rows = len(grads) / n
	}
	thetaPath, gradsPath, outPath := filepath.Join(dir, "theta.npy"), filepath.Join(dir, "grads.npy"), filepath.Join(dir, "out.npy")
	if err := npy.WriteFile(thetaPath, npy.Array{Shape: []int{n}, Data: theta}); err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(gradsPath, npy.Array{Shape: []int{rows, n}, Data: grads}); err != nil {
		t.Fatal(err)
	}
	if len(noise) == 0 {
		noise = []string{"--noise", "off"}
	}
	args := append([]string{"run", dsl, "--grads", gradsPath, "--theta", thetaPath, "--out", outPath,
		"--sigma-w2", strconv.FormatFloat(sigmaW2, 'g', -1, 64)}, noise...)
	for _, s := range sets {
		args = append(args, "--set", s.name+"="+strconv.FormatFloat(s.value, 'g', -1, 64))
	}
	cmd := exec.Command(fibergenBin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("fibergen %v: %v\n%s", args, err, stderr.Bytes())
	}
	raw, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	out, err := npy.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("fibergen run wrote an unreadable %s: %v", outPath, err)
	}
	if len(out.Shape) != 1 || out.Shape[0] != n {
		t.Fatalf("fibergen run wrote shape %v, want [%d]", out.Shape, n)
	}
	return raw, out.Data
}
