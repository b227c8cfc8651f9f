package cuda

// nonFiniteKernel is the name of the entry point in nonFinitePTX.
const nonFiniteKernel = "fibergen_first_nonfinite"

// nonFinitePTX is the GPU side of the non-finite guard, written by hand:
//
//	fibergen_first_nonfinite(const float *g, u64 n, u64 *first)
//
// Each thread walks i = blockIdx.x·blockDim.x + threadIdx.x, i + stride, …
// (a grid-stride loop, so any 1-D grid covers g) while i < n and stops at
// its first entry whose exponent bits are all ones — NaN or ±Inf, tested on
// the bits so that no float comparison is involved — storing i into *first
// with an atomic minimum. The caller sets *first to 2^64-1 before the
// launch; it stays there when every entry is finite. A thread's indexes
// grow, so the minimum over threads is the first bad index.
//
// The instruction forms are those llc-14 (-march=nvptx64 -mcpu=sm_80) emits
// for the same loop written in LLVM IR (atomicrmw umin on an addrspace(1)
// i64 gives atom.global.min.u64); the pointers are converted to global
// addresses with cvta.to.global as nvcc does.
const nonFinitePTX = `//
// fibergen: the non-finite guard of the CUDA backend (runtime/cuda/guard.go).
//

.version 7.0
.target sm_80
.address_size 64

.visible .entry fibergen_first_nonfinite(
	.param .u64 fibergen_first_nonfinite_g,
	.param .u64 fibergen_first_nonfinite_n,
	.param .u64 fibergen_first_nonfinite_first
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [fibergen_first_nonfinite_g];
	ld.param.u64 	%rd2, [fibergen_first_nonfinite_n];
	ld.param.u64 	%rd3, [fibergen_first_nonfinite_first];
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd3;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %nctaid.x;
	mul.wide.u32 	%rd6, %r1, %r2;
	cvt.u64.u32 	%rd7, %r3;
	add.s64 	%rd6, %rd6, %rd7;
	mul.wide.u32 	%rd8, %r4, %r2;
$L_loop:
	setp.ge.u64 	%p1, %rd6, %rd2;
	@%p1 bra 	$L_done;
	shl.b64 	%rd9, %rd6, 2;
	add.s64 	%rd10, %rd4, %rd9;
	ld.global.u32 	%r5, [%rd10];
	and.b32 	%r6, %r5, 2139095040;
	setp.eq.s32 	%p2, %r6, 2139095040;
	@%p2 bra 	$L_found;
	add.s64 	%rd6, %rd6, %rd8;
	bra.uni 	$L_loop;
$L_found:
	atom.global.min.u64 	%rd11, [%rd5], %rd6;
$L_done:
	ret;
}
`
