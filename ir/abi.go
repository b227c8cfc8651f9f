package ir

// The kernels' ABI positions, the one place they are written: every entry
// point (the step, privatize, the diagnostics; the PTX and the host
// functions) takes the buffers in this order — the parameters, the
// gradient, then the states in declaration order — and after them the host
// scalars, the last of which is σ_w (docs/kernels.md). The runtime, the
// manifest, the interpreter, the C ABI and the PyTorch binding (through its
// generated _abi.py) index by these names.
const (
	ThetaBuffer = 0 // the parameters, "theta"
	GradBuffer  = 1 // the gradient, "g", privatized in place
	FirstState  = 2 // the first state; the others follow it
)

// The names of the two buffers every optimizer has.
const (
	ThetaName = "theta"
	GradName  = "g"
)

// SigmaWScalar is the position of σ_w among n host scalars: the last.
func SigmaWScalar(n int) int { return n - 1 }

// The STREAM kernels' symbols (without a variant's suffix): the baseline a
// CPU step is measured against, host functions of the step's signature
// that codegen/llvmgen emits (StreamModule) and the runtime calls
// (HostStream). Copy sets buffer 0 to buffer 1; triad sets buffer 0 to
// buffer 1 + scalar 0 · buffer 2.
const (
	StreamCopySymbol  = "fibergen_stream_copy"
	StreamTriadSymbol = "fibergen_stream_triad"
)
