// Package ptxas runs NVIDIA's PTX assembler on a module and reads what it
// reports of each kernel — registers, stack frame, spills — for the tests
// that hold fibergen's PTX to what its launches need. ptxas is not part
// of fibergen's build: `make test` installs it where it can
// (scripts/install-ptxas.sh), and the tests skip where it is absent.
package ptxas

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
)

// Kernel is what ptxas -v reports of one kernel for one architecture.
type Kernel struct {
	Name, Arch  string
	Registers   int
	StackFrame  int // bytes
	SpillStores int // bytes
	SpillLoads  int // bytes
}

// Find returns the assembler to use: $FIBERGEN_PTXAS, or ptxas on PATH.
func Find() (string, bool) {
	if p := os.Getenv("FIBERGEN_PTXAS"); p != "" {
		return p, true
	}
	p, err := exec.LookPath("ptxas")
	return p, err == nil
}

var (
	entryRe = regexp.MustCompile(`Compiling entry function '(\w+)' for '(\w+)'`)
	frameRe = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	regsRe  = regexp.MustCompile(`Used (\d+) registers`)
)

// Assemble assembles ptx for arch (sm_80, sm_90, …) at -O3 and returns
// each kernel's report, in the order ptxas gives them.
func Assemble(ptxas string, ptx []byte, arch string) ([]Kernel, error) {
	dir, err := os.MkdirTemp("", "fibergen-ptxas-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "in.ptx")
	if err := os.WriteFile(in, ptx, 0o644); err != nil {
		return nil, err
	}
	out, err := exec.Command(ptxas, "-arch="+arch, "-O3", "-v", in, "-o", filepath.Join(dir, "out.cubin")).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("ptxas -arch=%s: %v\n%s", arch, err, out)
	}
	return parse(string(out))
}

// parse reads ptxas -v's report: per kernel, the line naming it, then its
// stack frame and spills, then its registers.
func parse(report string) ([]Kernel, error) {
	var ks []Kernel
	for _, line := range regexp.MustCompile(`\r?\n`).Split(report, -1) {
		if m := entryRe.FindStringSubmatch(line); m != nil {
			ks = append(ks, Kernel{Name: m[1], Arch: m[2], Registers: -1})
			continue
		}
		if len(ks) == 0 {
			continue
		}
		k := &ks[len(ks)-1]
		if m := frameRe.FindStringSubmatch(line); m != nil {
			k.StackFrame, k.SpillStores, k.SpillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
		} else if m := regsRe.FindStringSubmatch(line); m != nil {
			k.Registers = atoi(m[1])
		}
	}
	for _, k := range ks {
		if k.Registers < 0 {
			return nil, fmt.Errorf("ptxas reported no register count for %s:\n%s", k.Name, report)
		}
	}
	if len(ks) == 0 {
		return nil, fmt.Errorf("ptxas reported no kernel:\n%s", report)
	}
	return ks, nil
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// MaxThreads is the largest block, a multiple of the warp, that a kernel
// using regs registers per thread launches with on sm_80 and sm_90: an SM's
// 65,536 registers are split over its 4 sub-partitions, a block's warps
// are spread evenly over them, and each warp takes its registers in units
// of 256 (cuda_occupancy.h).
func MaxThreads(regs int) int {
	perWarp := (max(regs, 1)*32 + 255) / 256 * 256
	return min(65536/perWarp/4*4*32, 1024)
}

// Fits returns nil if k needs no stack frame and no spills and its
// registers fit a block of block threads, else what it needs.
func (k Kernel) Fits(block int) error {
	if k.StackFrame != 0 || k.SpillStores != 0 || k.SpillLoads != 0 {
		return fmt.Errorf("%s %s: %d bytes of stack frame, %d of spill stores, %d of spill loads",
			k.Name, k.Arch, k.StackFrame, k.SpillStores, k.SpillLoads)
	}
	if block > MaxThreads(k.Registers) {
		return fmt.Errorf("%s %s: %d registers × %d threads do not fit a block's 65,536 (at most %d threads)",
			k.Name, k.Arch, k.Registers, block, MaxThreads(k.Registers))
	}
	return nil
}
