package llvmgen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"sync"

	"github.com/fibergen/fibergen/internal/fileout"
	"github.com/fibergen/fibergen/internal/hostisa"
	"github.com/fibergen/fibergen/manifest"
)

// LLVMMajor is the LLVM release whose IR syntax github.com/llir/llvm v0.3.6
// writes (typed pointers) and whose llc made the checked-in PTX.
const LLVMMajor = 14

// Toolchain is the set of external programs that turn a module into PTX and
// into a host shared object: LLVM's opt and llc, and a linker.
type Toolchain struct {
	Opt, LLC string // paths of opt and llc, LLVM 14
	Linker   string // path of ld.lld or ld; "" if none was found
	Version  string // llc's version, e.g. "14.0.6"
}

// missingLLVM is the message for a machine without LLVM 14.
const missingLLVM = "fibergen needs LLVM 14's llc and opt (Debian package llvm-14: apt-get install -y llvm-14)"

// FindToolchain looks for llc-14/opt-14 (or llc/opt of version 14) on PATH
// and in /usr/lib/llvm-14/bin, and for a linker (ld.lld-14, ld.lld, ld).
// It looks once per process.
var FindToolchain = sync.OnceValues(findToolchain)

func findToolchain() (*Toolchain, error) {
	var opt string
	var optErr error
	var wg sync.WaitGroup
	wg.Go(func() { opt, _, optErr = findTool("opt") }) // each probe runs the tool once: at once
	llc, version, err := findTool("llc")
	wg.Wait()
	if err == nil {
		err = optErr // one message: without LLVM both probes fail alike
	}
	if err != nil {
		return nil, err
	}
	tc := &Toolchain{Opt: opt, LLC: llc, Version: version}
	for _, name := range []string{"ld.lld-14", "ld.lld", "ld"} {
		if path, err := exec.LookPath(name); err == nil {
			tc.Linker = path
			break
		}
	}
	return tc, nil
}

// findTool finds name-14, then name of version 14, and returns its path
// and version.
func findTool(name string) (path, version string, err error) {
	candidates := []string{name + "-14", filepath.Join("/usr/lib/llvm-14/bin", name), name}
	var found []string
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if v, err := knownVersion(path); err == nil && majorOf(v) == LLVMMajor {
			return path, v, nil
		} else if err == nil {
			found = append(found, fmt.Sprintf("%s is LLVM %s", path, v))
		}
	}
	if len(found) > 0 {
		return "", "", fmt.Errorf("%s; found only %s", missingLLVM, strings.Join(found, ", "))
	}
	return "", "", fmt.Errorf("%s; no %s-14 or %s on PATH or in /usr/lib/llvm-14/bin", missingLLVM, name, name)
}

var (
	versionRE   = regexp.MustCompile(`LLVM version (\d+)\.(\d+)\.(\d+)`)
	versionOnly = regexp.MustCompile(`^\d+\.\d+\.\d+$`) // what toolVersion returns
)

// toolVersion runs path --version and returns LLVM's version, e.g. "14.0.6".
func toolVersion(path string) (string, error) {
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	m := versionRE.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("%s --version does not name an LLVM version", path)
	}
	return fmt.Sprintf("%s.%s.%s", m[1], m[2], m[3]), nil
}

// majorOf returns the major release of a version "14.0.6".
func majorOf(v string) int {
	var major int
	fmt.Sscanf(v, "%d", &major)
	return major
}

// The flags of every compilation: no floating-point contraction anywhere, so
// that each target rounds every operation as the Go reference does.
var (
	ptxFlags  = []string{"-O3", "-march=nvptx64", "-mcpu=sm_80", "-nvptx-fma-level=0", "--fp-contract=off"}
	hostFlags = []string{"-O3", "-filetype=obj", "-relocation-model=pic", "--fp-contract=off"}
	optPasses = "-passes=internalize,globaldce,default<O3>" // opt's, before either
)

// optimize runs opt on the module text ll, keeping only the entry point
// keep (the other wrapper is dropped) and optionally retargeting it.
func (tc *Toolchain) optimize(ll, keep string, retarget ...string) ([]byte, error) {
	args := append([]string{"-S", "-internalize-public-api-list=" + keep, optPasses}, retarget...)
	return run(tc.Opt, []byte(ll), args...)
}

// PTX compiles the NVPTX kernels of the module text ll (the step kernel,
// the privatize and diagnostic kernels) into PTX for sm_80, which the
// driver JIT-compiles for newer GPUs. A stamped module's PTX starts with a
// comment line carrying its ABI stamp (manifest.StampPTX), which the
// runtime checks against the manifest before it loads the PTX.
func (tc *Toolchain) PTX(ll string) ([]byte, error) {
	optimized, err := tc.optimize(ll, strings.Join(entryPoints(ll, true), ","))
	if err != nil {
		return nil, err
	}
	ptx, err := run(tc.LLC, optimized, ptxFlags...)
	if abi, ok := ABIOf(ll); ok && err == nil {
		ptx = manifest.StampPTX(abi, ptx)
	}
	return ptx, err
}

// hostTargets are the triples and data layouts of the hosts fibergen builds
// the host kernel for, by GOARCH.
var hostTargets = map[string][2]string{
	"amd64": {"x86_64-unknown-linux-gnu", "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"},
	"arm64": {"aarch64-unknown-linux-gnu", "e-m:e-i8:8:32-i16:16:32-i64:64-i128:128-n32:64-S128"},
}

// SharedObject compiles the host functions of the module text ll, whose
// step is fn, into a shared object for this machine at path, written
// atomically: the variants of this architecture (hostisa.For), each
// optimized and compiled by its own opt and llc, all at once, then linked.
func (tc *Toolchain) SharedObject(ll, fn, path string) error {
	target, ok := hostTargets[goruntime.GOARCH]
	if !ok || goruntime.GOOS != "linux" {
		return fmt.Errorf("fibergen builds host kernels for linux/amd64 and linux/arm64, not %s/%s", goruntime.GOOS, goruntime.GOARCH)
	}
	if tc.Linker == "" {
		return errors.New("fibergen needs a linker for the host kernel (Debian package binutils or lld-14: apt-get install -y binutils)")
	}
	variants, hosts := hostisa.For(goruntime.GOARCH), entryPoints(ll, false)
	objs, errs := make([][]byte, len(variants)), make([]error, len(variants))
	var wg sync.WaitGroup
	for i, v := range variants {
		keep := variantEntries(hosts, v)
		if v.Name == hostisa.Generic.Name {
			keep = append(keep, strings.TrimSuffix(fn, hostSuffix)+"_abi") // the module's ABI stamp, once
		}
		wg.Go(func() { objs[i], errs[i] = tc.hostObject(ll, keep, target) })
	}
	wg.Wait()
	for _, err := range errs { // the first variant's: a missing tool fails them all alike
		if err != nil {
			return err
		}
	}
	return tc.link(objs, path)
}

// variantEntries lists the host functions among hosts that are compiled
// for the variant v.
func variantEntries(hosts []string, v hostisa.Variant) []string {
	var out []string
	for _, fn := range hosts {
		if hostisa.Of(fn).Name == v.Name {
			out = append(out, fn)
		}
	}
	return out
}

// hostObject optimizes the module text ll for target, keeping only the
// globals keep, and compiles it into an object file.
func (tc *Toolchain) hostObject(ll string, keep []string, target [2]string) ([]byte, error) {
	optimized, err := tc.optimize(ll, strings.Join(keep, ","), "-mtriple="+target[0], "--data-layout="+target[1])
	if err != nil {
		return nil, err
	}
	return run(tc.LLC, optimized, hostFlags...)
}

// link links the object files objs into a shared object at path.
func (tc *Toolchain) link(objs [][]byte, path string) error {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".fibergen-link-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "kernel.so")
	args := []string{"-shared", "-o", out}
	for i, obj := range objs {
		in := filepath.Join(dir, fmt.Sprintf("kernel%d.o", i))
		if err := os.WriteFile(in, obj, 0o644); err != nil {
			return err
		}
		args = append(args, in)
	}
	if _, err := run(tc.Linker, nil, args...); err != nil {
		return err
	}
	target, err := fileout.Target(path) // through a symbolic link; only over a regular file
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.Rename(out, target)
}

// run runs a tool with stdin and returns its stdout; a failure carries the
// tool's stderr. A feature or CPU name the tool does not know is a
// failure: LLVM warns and ignores it, and would compile a variant for
// other features than the runtime checks (hostisa).
func run(tool string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command(tool, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err == nil && unknownTarget.Match(stderr.Bytes()) {
		err = errors.New("unknown target name")
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s %s: %s", filepath.Base(tool), strings.Join(args, " "), msg)
	}
	return stdout.Bytes(), nil
}

// unknownTarget matches LLVM's warning about a target feature or CPU it
// does not know ("'+avx9' is not a recognized feature for this target
// (ignoring feature)").
var unknownTarget = regexp.MustCompile(`is not a recognized (feature|processor) for this target`)

// entryDef matches the definition of an exported function in a module's
// text: group 1 is "ptx_kernel " for an NVPTX kernel, group 2 the name.
var entryDef = regexp.MustCompile(`(?m)^define (ptx_kernel )?void @([A-Za-z0-9_.]+)\(`)

// entryPoints lists the exported functions of the module text ll: the
// NVPTX kernels if kernels, else the host functions (whose code llc cannot
// compile for the other target).
func entryPoints(ll string, kernels bool) []string {
	var out []string
	for _, m := range entryDef.FindAllStringSubmatch(ll, -1) {
		if (m[1] != "") == kernels {
			out = append(out, m[2])
		}
	}
	return out
}
