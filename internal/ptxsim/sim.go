// Package ptxsim runs the PTX that fibergen emits without a GPU: it parses
// a module (Parse) and launches its kernels (Kernel.Launch) over a
// simulated global memory (Memory), warp by warp, so that the Go reference,
// the host kernel and the PTX kernel can be held to the same bits on every
// CI run, not only on the rare machine with a GPU.
//
// It implements exactly the subset of PTX that fibergen's kernels use (see
// docs/kernels.md, "The PTX simulator"), and fails loudly on anything
// else: Parse refuses an opcode, type, modifier, state space or directive
// it does not implement, and a launch stops with a *Fault on an access out
// of every allocation or misaligned for its width (16 bytes for .v4), a
// store to memory the launch read through ld.global.nc (or such a read of
// memory it wrote), a word one thread wrote and another touched, or one
// thread read and another wrote (a race), a shfl.sync whose member lanes
// are not all waiting with the same mask, an integer division by zero, a
// thread past its last instruction, or more instructions than Limits allow.
//
// Arithmetic is IEEE binary32/binary64 with round-to-nearest-even, no
// flush to zero and no fused operations. An f32 NaN result is the GPU's
// canonical NaN 0x7fffffff; an f64 operation passes on its first NaN
// operand's payload, quieted, and makes 0x7fffffffffffffff of an invalid
// one (the PTX ISA supports f64 payloads; that NaN is this package's
// choice). Moves, selects, loads, stores and shuffles carry bits unchanged. Forms whose results
// the PTX ISA leaves to the code generator — add.f32 without .rn, which
// may be contracted into an fma; div.approx; sqrt.approx — are refused,
// since fibergen's bit-exactness needs the IEEE forms.
//
// Threads of a warp run one after the other up to their next shfl.sync,
// where the warp exchanges values (the independent thread scheduling of
// Volta and later); blocks run one after the other in increasing order.
package ptxsim

import (
	"encoding/binary"
	"fmt"
)

// Module is a parsed PTX module.
type Module struct {
	Version string // .version
	Target  string // .target
	Kernels map[string]*Kernel
}

// Param is a kernel parameter as declared: .param .u64 name.
type Param struct {
	Name string
	Type string // u64, f32, ...
	Size int    // bytes
}

// Kernel is a compiled .entry.
type Kernel struct {
	Name   string
	Params []Param
	code   []inst
	// init is a thread's register file before it starts: the special
	// registers, the declared registers (zero) and the immediates.
	init []uint64
}

// inst is one compiled instruction.
type inst struct {
	text  string // the opcode, for faults
	line  int
	guard int32 // slot of the guard predicate, or -1
	neg   bool  // @!%p
	kind  instKind
	exec  func(t *thread)
	// target is a branch's instruction index.
	target int
	// shfl is a shuffle's mode (up, down, bfly, idx) and operand slots.
	shfl *shuffle
}

type instKind uint8

const (
	plain instKind = iota
	branch
	shflSync
	exit
	fallOff // after the last instruction: a thread got past it
)

// Limits bound a launch.
type Limits struct {
	// Instructions is the most instructions one thread may execute; 0
	// means DefaultInstructions.
	Instructions int64
}

// DefaultInstructions is the instruction budget of a thread without
// Limits: far more than any grid-stride loop of fibergen's needs, so that
// only an endless loop reaches it.
const DefaultInstructions = 1 << 30

// MaxBlockThreads is the most threads a block may have.
const MaxBlockThreads = 1024

// Stats describes a finished launch.
type Stats struct {
	Instructions int64 // executed, over all threads
	Threads      int64
}

// Fault is an error of a launch: the kernel, the instruction (its PTX line
// and opcode), the thread, and what went wrong.
type Fault struct {
	Kernel string
	Line   int
	Op     string
	Block  [3]uint32
	Thread [3]uint32
	Msg    string
	// Timeout says the thread ran past its instruction budget.
	Timeout bool
}

func (f *Fault) Error() string {
	return fmt.Sprintf("ptxsim: %s, line %d (%s), block %v thread %v: %s", f.Kernel, f.Line, f.Op, f.Block, f.Thread, f.Msg)
}

// thread is one thread's state.
type thread struct {
	r     []uint64
	pc    int
	count int64 // instructions executed
	state threadState
	id    uint32 // 1 + the thread's index in the launch, for the race check
	l     *launch
	// shflValue is the value a thread waiting at a shfl.sync offers.
	shflValue uint64
}

type threadState uint8

const (
	running threadState = iota
	waiting             // at a shfl.sync
	exited
)

// launch is the state of one Launch.
type launch struct {
	k      *Kernel
	mem    *Memory
	params [][]byte
	epoch  uint32
	budget int64
	count  int64 // instructions, over the finished threads
	cur    *thread
}

type faultPanic struct {
	msg     string
	timeout bool
}

// fault stops the launch with a Fault at the current thread and
// instruction.
func (l *launch) fault(format string, args ...any) {
	panic(faultPanic{msg: fmt.Sprintf(format, args...)})
}

// Launch runs the kernel on grid × block threads over mem with args, one
// byte slice per parameter holding its value in little-endian order and
// of the declared size (as the driver copies a parameter from what
// cuLaunchKernel's kernelParams point at). Every dimension must be at
// least 1 and a block at most 1024 threads.
func (k *Kernel) Launch(mem *Memory, grid, block [3]uint32, args [][]byte, lim Limits) (Stats, error) {
	if err := k.checkLaunch(grid, block, args); err != nil {
		return Stats{}, err
	}
	mem.epoch++
	l := &launch{k: k, mem: mem, params: args, epoch: mem.epoch, budget: lim.Instructions}
	if l.budget <= 0 {
		l.budget = DefaultInstructions
	}
	nthreads := int(block[0] * block[1] * block[2])
	warp := make([]*thread, 32)
	for i := range warp {
		warp[i] = &thread{r: make([]uint64, len(k.init)), l: l}
	}
	var st Stats
	for bz := range grid[2] {
		for by := range grid[1] {
			for bx := range grid[0] {
				ctaid := [3]uint32{bx, by, bz}
				for w := 0; w < nthreads; w += 32 {
					lanes := warp[:min(32, nthreads-w)]
					base := uint32(((int(bz)*int(grid[1])+int(by))*int(grid[0])+int(bx))*nthreads + w)
					k.startWarp(lanes, w, base, ctaid, grid, block)
					if err := l.runWarp(lanes, ctaid); err != nil {
						return st, err
					}
					st.Threads += int64(len(lanes))
					for _, t := range lanes {
						l.count += t.count
					}
				}
			}
		}
	}
	st.Instructions = l.count
	return st, nil
}

func (k *Kernel) checkLaunch(grid, block [3]uint32, args [][]byte) error {
	if len(args) != len(k.Params) {
		return fmt.Errorf("ptxsim: %s takes %d parameters, launched with %d", k.Name, len(k.Params), len(args))
	}
	for i, a := range args {
		if len(a) != k.Params[i].Size {
			return fmt.Errorf("ptxsim: %s: parameter %d (%s, .%s) given %d bytes", k.Name, i, k.Params[i].Name, k.Params[i].Type, len(a))
		}
	}
	for i := range 3 {
		if grid[i] == 0 || block[i] == 0 {
			return fmt.Errorf("ptxsim: %s launched with grid %v, block %v: a dimension is 0", k.Name, grid, block)
		}
	}
	if n := uint64(block[0]) * uint64(block[1]) * uint64(block[2]); n > MaxBlockThreads || block[2] > 64 {
		return fmt.Errorf("ptxsim: %s launched with block %v: at most %d threads (and 64 in z)", k.Name, block, MaxBlockThreads)
	}
	if grid[1] > 65535 || grid[2] > 65535 || grid[0] > 1<<31-1 {
		return fmt.Errorf("ptxsim: %s launched with grid %v: too large", k.Name, grid)
	}
	return nil
}

// startWarp sets the lanes' registers for the warp whose first thread is
// the w-th of its block and the base-th of the launch.
func (k *Kernel) startWarp(lanes []*thread, w int, base uint32, ctaid, grid, block [3]uint32) {
	for i, t := range lanes {
		copy(t.r, k.init)
		lin := uint32(w + i)
		tid := [3]uint32{lin % block[0], lin / block[0] % block[1], lin / (block[0] * block[1])}
		for d := range 3 {
			t.r[d], t.r[3+d], t.r[6+d], t.r[9+d] = uint64(tid[d]), uint64(block[d]), uint64(ctaid[d]), uint64(grid[d])
		}
		t.r[12] = uint64(i)
		t.pc, t.count, t.state, t.id = 0, 0, running, base+uint32(i)+1
	}
}

// runWarp runs the lanes of one warp to their ends, meeting at every
// shfl.sync.
func (l *launch) runWarp(lanes []*thread, ctaid [3]uint32) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(faultPanic)
			if !ok {
				panic(r)
			}
			t := l.cur
			in := l.k.code[min(t.pc, len(l.k.code)-1)]
			err = &Fault{Kernel: l.k.Name, Line: in.line, Op: in.text, Block: ctaid,
				Thread: [3]uint32{uint32(t.r[0]), uint32(t.r[1]), uint32(t.r[2])}, Msg: f.msg, Timeout: f.timeout}
		}
	}()
	for {
		live := false
		for _, t := range lanes {
			if t.state == running {
				l.run(t)
			}
			live = live || t.state != exited
		}
		if !live {
			return nil
		}
		l.exchange(lanes)
	}
}

// run executes t until it exits or waits at a shfl.sync.
func (l *launch) run(t *thread) {
	l.cur = t
	code := l.k.code
	for {
		t.count++
		if t.count > l.budget {
			panic(faultPanic{msg: fmt.Sprintf("the thread ran past its budget of %d instructions", l.budget), timeout: true})
		}
		in := &code[t.pc]
		if in.guard >= 0 && (t.r[in.guard] != 0) == in.neg {
			t.pc++
			continue
		}
		switch in.kind {
		case plain:
			in.exec(t)
			t.pc++
		case branch:
			t.pc = in.target
		case shflSync:
			t.shflValue = t.r[in.shfl.a]
			t.state = waiting
			return
		case exit:
			t.state = exited
			return
		case fallOff:
			l.fault("the thread ran past the kernel's last instruction")
		}
	}
}

// readParam returns parameter i's value, zero-extended.
func (l *launch) readParam(i int) uint64 {
	b := l.params[i]
	if len(b) == 4 {
		return uint64(binary.LittleEndian.Uint32(b))
	}
	return binary.LittleEndian.Uint64(b)
}
