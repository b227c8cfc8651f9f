package ptxsim

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// header starts every test module.
const header = ".version 7.0\n.target sm_80\n.address_size 64\n"

// opKernel wraps body in a kernel k(out, x, y) whose prelude loads the
// bits of x and y into %rd2, %rd3 (u64), %r1, %r2 (their low 32 bits),
// %f1, %f2 (those as f32) and %fd1, %fd2 (as f64), and whose postlude
// stores %rd4 at out.
func opKernel(body string) string {
	return header + `.visible .entry k(.param .u64 out, .param .u64 x, .param .u64 y)
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .f32 %f<8>;
	.reg .b64 %rd<8>;
	.reg .f64 %fd<8>;
	ld.param.u64 %rd1, [out];
	ld.param.u64 %rd2, [x];
	ld.param.u64 %rd3, [y];
	cvt.u32.u64 %r1, %rd2;
	cvt.u32.u64 %r2, %rd3;
	mov.b32 %f1, %r1;
	mov.b32 %f2, %r2;
	mov.b64 %fd1, %rd2;
	mov.b64 %fd2, %rd3;
	` + body + `
	st.global.u64 [%rd1], %rd4;
	ret;
}
`
}

// f32Op, f64Op, b32Op and predOp are the bodies of opKernel for an
// instruction whose result is an f32, an f64, a 32-bit integer or a
// predicate.
func f32Op(in string) string {
	return in + "\n\tmov.b32 %r3, %f3;\n\tcvt.u64.u32 %rd4, %r3;"
}
func f64Op(in string) string { return in + "\n\tmov.b64 %rd4, %fd3;" }
func b32Op(in string) string { return in + "\n\tcvt.u64.u32 %rd4, %r3;" }
func predOp(in string) string {
	return in + "\n\tselp.b64 %rd4, 1, 0, %p1;"
}

func u64(b []byte) uint64  { return binary.LittleEndian.Uint64(b) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// runOp runs opKernel(body) on one thread and returns what it stored.
func runOp(t *testing.T, body string, x, y uint64) (uint64, error) {
	t.Helper()
	m, err := Parse([]byte(opKernel(body)))
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	mem := NewMemory()
	out, _ := mem.Alloc(8)
	one := [3]uint32{1, 1, 1}
	if _, err := m.Kernels["k"].Launch(mem, one, one, [][]byte{le64(out), le64(x), le64(y)}, Limits{}); err != nil {
		return 0, err
	}
	b := make([]byte, 8)
	if err := mem.Read(out, b); err != nil {
		t.Fatal(err)
	}
	return u64(b), nil
}

func f32b(v float32) uint64 { return uint64(math.Float32bits(v)) }
func f64b(v float64) uint64 { return math.Float64bits(v) }

// TestSemantics checks instruction forms against known answers: IEEE
// rounding to nearest even, subnormals kept, the canonical NaN, PTX's min,
// ordered and unordered comparisons, conversions, and the integer forms
// at their edges.
func TestSemantics(t *testing.T) {
	neg1 := uint64(math.MaxUint64)
	for _, c := range []struct {
		body    string
		x, y    uint64
		want    uint64
		comment string
	}{
		{f32Op("add.rn.f32 %f3, %f1, %f2;"), 0x3f800000, 0x33800000, 0x3f800000, "1 + 2^-24: a tie, to even"},
		{f32Op("add.rn.f32 %f3, %f1, %f2;"), 0x3f800001, 0x33800000, 0x3f800002, "a tie, to even (up)"},
		{f32Op("sub.rn.f32 %f3, %f1, %f2;"), f32b(float32(math.Inf(1))), f32b(float32(math.Inf(1))), 0x7fffffff, "inf - inf: canonical NaN"},
		{f32Op("add.rn.f32 %f3, %f1, %f2;"), 0x7fc00001, f32b(1), 0x7fffffff, "a NaN's payload is not kept"},
		{f32Op("mul.rn.f32 %f3, %f1, %f2;"), 0x00800000, f32b(0.5), 0x00400000, "subnormal result, no flush to zero"},
		{f32Op("div.rn.f32 %f3, %f1, %f2;"), f32b(1), f32b(3), 0x3eaaaaab, "1/3"},
		{f32Op("div.rn.f32 %f3, %f1, %f2;"), 0, 0, 0x7fffffff, "0/0"},
		{f32Op("sqrt.rn.f32 %f3, %f1;"), f32b(2), 0, 0x3fb504f3, "sqrt 2"},
		{f32Op("sqrt.rn.f32 %f3, %f1;"), 0x80000000, 0, 0x80000000, "sqrt -0"},
		{f32Op("sqrt.rn.f32 %f3, %f1;"), f32b(-1), 0, 0x7fffffff, "sqrt -1"},
		{f32Op("neg.f32 %f3, %f1;"), 0x7fc00001, 0, 0x7fffffff, "an unspecified NaN: the canonical one"},
		{f32Op("neg.f32 %f3, %f1;"), 0x00000001, 0, 0x80000001, ""},
		{f32Op("abs.f32 %f3, %f1;"), 0x80000001, 0, 0x00000001, ""},
		{f64Op("abs.f64 %fd3, %fd1;"), 0xfff8000000000123, 0, 0xfff8000000000123, "a NaN passes through"},
		{f64Op("add.rn.f64 %fd3, %fd1, %fd2;"), f64b(1), 0x7ff0000000000123, 0x7ff8000000000123, "an f64 NaN's payload passes, quieted"},
		{f64Op("sub.rn.f64 %fd3, %fd1, %fd2;"), f64b(math.Inf(1)), f64b(math.Inf(1)), 0x7fffffffffffffff, "inf - inf"},
		{f32Op("max.f32 %f3, %f1, %f2;"), 0x7fc00000, f32b(-2), f32b(-2), "max with one NaN"},
		{f32Op("selp.f32 %f3, %f1, %f2, %p0;"), f32b(1), f32b(2), f32b(2), "%p0 starts false"},
		{f32Op("cvt.rn.f32.s32 %f3, %r1;"), 16777217, 0, 0x4b800000, "2^24+1: a tie, to even"},
		{f32Op("cvt.rn.f32.s32 %f3, %r1;"), uint64(uint32(-3 & 0xffffffff)), 0, f32b(-3), ""},
		{f32Op("cvt.rn.f32.u32 %f3, %r1;"), 0xffffffff, 0, 0x4f800000, "2^32-1 rounds to 2^32"},
		{f32Op("cvt.rn.f32.f64 %f3, %fd1;"), f64b(1 + 0x1p-24 + 0x1p-40), 0, 0x3f800001, "above the tie"},
		{f32Op("cvt.rn.f32.f64 %f3, %fd1;"), f64b(1e300), 0, 0x7f800000, "overflow to +inf"},
		{f64Op("cvt.f64.f32 %fd3, %f1;"), 0x00000001, 0, f64b(0x1p-149), "the smallest subnormal, exact"},
		{f64Op("add.rn.f64 %fd3, %fd1, %fd2;"), f64b(1), f64b(0x1p-53), f64b(1), "a tie, to even"},
		{f64Op("div.rn.f64 %fd3, %fd1, %fd2;"), f64b(1), f64b(0), f64b(math.Inf(1)), ""},
		{f64Op("sqrt.rn.f64 %fd3, %fd1;"), f64b(-1), 0, 0x7fffffffffffffff, ""},
		{f64Op("min.f64 %fd3, %fd1, %fd2;"), 0x7ff8000000000000, f64b(1), f64b(1), "min with one NaN"},
		{f64Op("min.f64 %fd3, %fd1, %fd2;"), f64b(0), f64b(math.Copysign(0, -1)), 0x8000000000000000, "-0 below +0"},
		{predOp("setp.geu.f64 %p1, %fd1, %fd2;"), 0x7ff8000000000000, f64b(1), 1, "unordered: true on NaN"},
		{predOp("setp.gt.f32 %p1, %f1, %f2;"), 0x7fc00000, 0, 0, "ordered: false on NaN"},
		{predOp("setp.nan.f32 %p1, %f1, %f2;"), f32b(1), 0x7fc00000, 1, ""},
		{predOp("setp.eq.f32 %p1, %f1, %f2;"), 0x80000000, 0, 1, "-0 == +0"},
		{predOp("setp.lt.s64 %p1, %rd2, %rd3;"), neg1, 1, 1, "signed"},
		{predOp("setp.lt.u64 %p1, %rd2, %rd3;"), neg1, 1, 0, "unsigned"},
		{predOp("setp.lt.s32 %p1, %r1, %r2;"), 0x80000000, 0, 1, "signed 32-bit"},
		{predOp("setp.lt.s64 %p2, %rd2, %rd3;\n\tsetp.eq.b64 %p3, %rd2, %rd2;\n\tand.pred %p1, %p2, %p3;"), 1, 2, 1, ""},
		{"mul.lo.s64 %rd4, %rd2, %rd3;", neg1, 3, neg1 - 2, ""},
		{"mul.wide.u32 %rd4, %r1, %r2;", 0xffffffff, 0xffffffff, 0xfffffffe00000001, ""},
		{b32Op("mul.hi.u32 %r3, %r1, %r2;"), 0xffffffff, 0xffffffff, 0xfffffffe, ""},
		{b32Op("mad.lo.s32 %r3, %r1, %r2, %r2;"), 0xffffffff, 3, 0, "-1*3 + 3"},
		{"shr.s64 %rd4, %rd2, 1;", neg1 - 7, 0, neg1 - 3, "-8 >> 1"},
		{"shr.u64 %rd4, %rd2, 1;", neg1 - 7, 0, (neg1 - 7) >> 1, ""},
		{"cvt.u32.u64 %r5, %rd3;\n\tshl.b64 %rd4, %rd2, %r5;", 1, 64, 0, "a shift by the width"},
		{b32Op("shr.u32 %r3, %r1, %r2;"), 0xffffffff, 40, 0, ""},
		{"div.s64 %rd4, %rd2, %rd3;", neg1 - 6, 2, neg1 - 2, "-7/2 truncates"},
		{b32Op("div.u32 %r3, %r1, %r2;"), 7, 2, 3, ""},
		{"min.s64 %rd4, %rd2, %rd3;", neg1, 1, neg1, ""},
		{"max.s64 %rd4, %rd2, %rd3;", neg1, 1, 1, ""},
		{"neg.s64 %rd4, %rd2;", 5, 0, neg1 - 4, ""},
		{"and.b64 %rd4, %rd2, -4;", 7, 0, 4, ""},
		{"xor.b64 %rd4, %rd2, %rd3;", 6, 3, 5, ""},
		{"selp.b64 %rd4, 0, %rd2, %p0;", 9, 0, 9, ""},
		{"cvt.s64.s32 %rd4, %r1;", 0xfffffffe, 0, neg1 - 1, "sign extension"},
		{"cvt.u64.u32 %rd4, %r1;", 0xfffffffe, 0, 0xfffffffe, "zero extension"},
		{"cvta.to.global.u64 %rd4, %rd2;", 1 << 40, 0, 1 << 40, ""},
		{"add.s64 %rd4, %rd2, 2654435769;", 1, 0, 2654435770, "an immediate above 2^31"},
		{b32Op("add.s32 %r3, %r1, -1879881855;"), 1879881855, 0, 0, ""},
		{b32Op("mov.u32 %r3, %tid.x;"), 0, 0, 0, ""},
		{f32Op("min.NaN.f32 %f3, %f1, %f2;"), 0x7fc00001, f32b(-2), 0x7fffffff, "min.NaN: NaN if either is"},
		{f32Op("max.NaN.f32 %f3, %f1, %f2;"), f32b(-2), 0x7fc00000, 0x7fffffff, ""},
		{f32Op("max.NaN.f32 %f3, %f1, %f2;"), f32b(-2), f32b(3), f32b(3), ""},
		{f32Op("cvt.rn.f32.u64 %f3, %rd2;"), 1<<63 + 1<<39, 0, 0x5f000000, "2^63 + 2^39: a tie, to even"},
		{f32Op("cvt.rn.f32.u64 %f3, %rd2;"), 1<<63 + 1<<39 + 1, 0, 0x5f000001, "above the tie"},
		{f32Op("cvt.rn.f32.u64 %f3, %rd2;"), neg1, 0, 0x5f800000, "2^64-1 rounds to 2^64"},
		{f32Op("cvt.rn.f32.s64 %f3, %rd2;"), neg1 - 2, 0, f32b(-3), ""},
		{b32Op("bfe.u32 %r3, %r1, 23, 8;"), 0x3f800000, 0, 127, "a float's exponent field"},
		{b32Op("bfe.u32 %r3, %r1, 28, 8;"), 0xf0000000, 0, 0xf, "past bit 31: zeros"},
		{b32Op("bfe.s32 %r3, %r1, 4, 4;"), 0x80, 0, 0xfffffff8, "sign-extended"},
		{b32Op("bfe.u32 %r3, %r1, 4, 0;"), 0xff, 0, 0, "no bits"},
		{b32Op("shf.l.wrap.b32 %r3, %r1, %r1, 8;"), 0x12345678, 0, 0x34567812, "a rotation left by 8"},
		{b32Op("shf.l.wrap.b32 %r3, %r1, %r2, 36;"), 0x12345678, 0x9abcdef0, 0xabcdef01, "wrap: 36 is 4"},
		{b32Op("shf.r.clamp.b32 %r3, %r1, %r2, 40;"), 0x12345678, 0x9abcdef0, 0x9abcdef0, "clamp: 40 is 32"},
	} {
		got, err := runOp(t, c.body, c.x, c.y)
		if err != nil {
			t.Errorf("%s (%s): %v", c.body, c.comment, err)
		} else if got != c.want {
			t.Errorf("%s on %#x, %#x (%s): %#x, want %#x", strings.ReplaceAll(c.body, "\n\t", " "), c.x, c.y, c.comment, got, c.want)
		}
	}
}

// TestParseErrors: what the simulator does not implement is an error at
// its line and column, before anything runs.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"add.f32 %f3, %f1, %f2;", "20:2: add.f32: only the IEEE round-to-nearest form .rn"},
		{"div.approx.f32 %f3, %f1, %f2;", "20:2: div.approx.f32: only the IEEE round-to-nearest form .rn"},
		{"sqrt.approx.f32 %f3, %f1;", "20:2: sqrt.approx.f32: only sqrt.rn.f32"},
		{"fma.rn.f32 %f3, %f1, %f2, %f1;", `20:2: unsupported instruction "fma.rn.f32"`},
		{"ld.shared.f32 %f3, [%rd1];", `20:2: unsupported state space in "ld.shared.f32"`},
		{"add.rn.f32 %f3, %f1, %rd2;", "20:23: register %rd2 of type .b64 used as .f32"},
		{"add.rn.f32 %f3, %f1, %r1;", ""}, // .b32 registers serve float instructions
		{"add.s64 %rd4, %rd2, %r1;", "20:22: register %r1 of type .b32 used as .s64"},
		{"add.rn.f32 %f3, %f1, %f9;", "20:23: undeclared register %f9"},
		{"bra LBB9;", `20:6: branch to an undefined label "LBB9"`},
		{"add.rn.f32 %f3, %f1, 1.5;", "20:23: a .f32 immediate is written 0f and 8 hex digits"},
		{"add.s32 %r3, %r1, 4294967296;", "20:20: immediate 4294967296 does not fit .s32"},
		{"ld.param.u32 %r3, [x];", "20:20: ld.param.u32 of parameter x, declared .u64"},
		{"shfl.sync.bfly.b32 %r3, %r1, 1, 31;", "20:2: shfl.sync.bfly.b32 takes 5 operands, not 4"},
		{"setp.lt.and.s64 %p1, %rd2, %rd3, %p2;", `20:2: unsupported comparison "setp.lt.and.s64"`},
		{"mul.hi.s64 %rd4, %rd2, %rd3;", `20:2: unsupported instruction "mul.hi.s64"`},
		{"mul.foo.u32 %r3, %r1, %r2;", `20:2: unsupported instruction "mul.foo.u32"`},
		{"atom.global.add.s64 %rd4, [%rd1], %rd2;", `20:2: unsupported atomic "atom.global.add.s64"`},
		{"add.s64 %rd4, %rd2, 1_000;", `20:22: bad integer immediate "1_000"`},
		{"add.s64 %rd4, %rd2, 0o17;", `20:22: bad integer immediate "0o17"`},
		{"ret.foo;", `20:2: unsupported instruction "ret.foo"`},
		{"ld.global.v4.f32 {{%f1, %f2}, %f3, %f4}, [%rd1];", "20:20: a vector holds 2 or 4 registers"},
		{"mov.u32 %tid.x, %r1;", `20:10: expected a destination register of type .u32, found "%tid.x"`},
		{"@%r1 bra LBB9;", `20:3: guard "%r1" is not a declared predicate register`},
		{"cvt.rzi.s32.f32 %r3, %f1;", `20:2: unsupported conversion "cvt.rzi.s32.f32"`},
		{"/* hi */", "20:2: block comments"},
	} {
		_, err := Parse([]byte(opKernel(c.body)))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.body, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want)):
			t.Errorf("%s: error %v, want %q…", c.body, err, c.want)
		}
	}
	for _, c := range []struct{ src, want string }{
		{header + ".global .f32 g;", `4:1: unsupported directive or statement ".global" at module scope`},
		{".address_size 32", "1:15: only .address_size 64"},
		{header + ".visible .entry k(.param .pred p) { ret; }", `4:26: unsupported parameter type ".pred"`},
		{header + ".visible .entry k() { .shared .f32 s; ret; }", `4:23: unsupported directive ".shared" in a kernel body`},
		{header + ".visible .entry k() { .reg .f32 %f1; }", "4:38: kernel k has no instructions"},
		{header + ".visible .entry k() { .reg f32 %f1; ret; }", `4:28: unsupported register type "f32"`},
		{header + ".visible .entry k() { .reg .b32 %a<65536>; ret; }", "4:33: kernel k declares more than 65523 registers"},
		{header + ".visible .entry k() { ret; } .visible .entry k() { ret; }", "4:30: kernel k defined twice"},
		{header + ".visible .entry k() { ret;", "4:27: unexpected end of file in kernel k"},
	} {
		if _, err := Parse([]byte(c.src)); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q…", c.src, err, c.want)
		}
	}
}

// faultKernel is a kernel k(buf) over one allocation, with body.
func faultKernel(body string) string {
	return header + `.visible .entry k(.param .u64 buf)
{
	.reg .pred %p<4>;
	.reg .b32 %r<8>;
	.reg .f32 %f<8>;
	.reg .b64 %rd<8>;
	ld.param.u64 %rd1, [buf];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
` + body + `
	ret;
}
`
}

// TestFaults: a launch that breaks a rule of the device stops with a
// *Fault naming the instruction, the thread and the rule; what is legal
// runs.
func TestFaults(t *testing.T) {
	for _, c := range []struct {
		body  string
		block uint32
		want  string
	}{
		{"ld.global.f32 %f1, [%rd3];", 32, ""},
		{"ld.global.f32 %f1, [%rd3];", 33, "line 14 (ld.global.f32), block [0 0 0] thread [32 0 0]: 4 bytes at 0x10000000080 are outside every allocation"},
		{"ld.global.f32 %f1, [%rd3+-4];", 1, "4 bytes at 0xfffffffffc are outside every allocation"},
		{"ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+4];", 1, "misaligned 16-byte access at 0x10000000004 (needs 16-byte alignment)"},
		{"ld.global.nc.f32 %f1, [%rd3];\n\tst.global.f32 [%rd3], %f1;", 1, "a store to a word this launch read through the non-coherent cache (ld.global.nc) (0x10000000000)"},
		{"st.global.f32 [%rd3], %f1;\n\tld.global.nc.f32 %f1, [%rd3];", 1, "ld.global.nc of a word this launch wrote (0x10000000000)"},
		{"st.global.f32 [%rd1], %f1;", 2, "a race: thread 1 accesses a word that thread 0 wrote in this launch (0x10000000000)"},
		{"atom.global.min.u64 %rd4, [%rd1], %rd2;", 32, ""},
		// 16-bit accesses (bfloat16 states): neighbouring halves of a 32-bit
		// word are no race, one half is; a 32-bit register loads zero-extended.
		{"mul.wide.u32 %rd4, %r1, 2;\n\tadd.s64 %rd5, %rd1, %rd4;\n\tst.global.u16 [%rd5], %r1;", 32, ""},
		{"st.global.u16 [%rd1+2], %r1;", 2, "a race: thread 1 accesses a word that thread 0 wrote in this launch (0x10000000002)"},
		{"ld.global.v4.u16 {%r2, %r3, %r4, %r5}, [%rd1+8];\n\tst.global.v4.u16 [%rd1], {%r2, %r3, %r4, %r5};", 1, ""},
		{"ld.global.v4.u16 {%r2, %r3, %r4, %r5}, [%rd1+2];", 1, "misaligned 8-byte access at 0x10000000002 (needs 8-byte alignment)"},
		{"shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;", 32, ""},
		{"shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;", 16, "shfl.sync names lane 16 in its member mask 0xffffffff, but the warp has 16 threads"},
		{"setp.eq.s32 %p1, %r1, 3;\n\t@%p1 ret;\n\tshfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;", 32, "but lane 3 has exited"},
		{"shfl.sync.idx.b32 %r2, %r1, 5, 31, 3;", 32, "shfl.sync reads lane 5, which is not in the member mask 0x3"},
		{"cvt.u32.u64 %r2, %rd1;\n\tdiv.u32 %r3, %r1, %r1;", 1, "integer division by zero"},
		{"LOOP:\n\tbra.uni LOOP;", 1, "the thread ran past its budget of 1000 instructions"},
		{"shfl.sync.idx.b32 %r2, %r1, 1, 31, -2;", 32, "shfl.sync on lane 0, which its member mask 0xfffffffe leaves out"},
		{"ld.global.f32 %f1, [%rd1];\n\tsetp.eq.s32 %p1, %r1, 1;\n\t@%p1 st.global.f32 [%rd1], %f1;", 2, "a race: thread 1 writes a word thread (several threads) read in this launch"},
		{"setp.eq.s32 %p1, %r1, 0;\n\t@%p1 ld.global.f32 %f1, [%rd1];\n\tsetp.eq.s32 %p1, %r1, 1;\n\t@%p1 st.global.f32 [%rd1], %f1;", 2, "a race: thread 1 writes a word thread 0 read in this launch"},
		{"atom.global.min.u64 %rd4, [%rd1], %rd2;\n\tld.global.u64 %rd5, [%rd1];", 1, ""},
		{"atom.global.min.u64 %rd4, [%rd1], %rd2;\n\tld.global.u64 %rd5, [%rd1];", 2, "a race: thread 1 writes a word thread 0 read in this launch"},
	} {
		m, err := Parse([]byte(faultKernel(c.body)))
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		mem := NewMemory()
		buf, _ := mem.Alloc(128)
		_, err = m.Kernels["k"].Launch(mem, [3]uint32{1, 1, 1}, [3]uint32{c.block, 1, 1}, [][]byte{le64(buf)}, Limits{Instructions: 1000})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.body, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s (block %d): error %v, want …%s…", c.body, c.block, err, c.want)
		}
	}
}

// TestMemory: host copies are bounds-checked like the kernels' accesses,
// and freed memory is gone.
func TestMemory(t *testing.T) {
	mem := NewMemory()
	a, _ := mem.Alloc(100)
	b, _ := mem.Alloc(8)
	if a%256 != 0 || b%256 != 0 || b < a+100 {
		t.Errorf("allocations at %#x and %#x", a, b)
	}
	if err := mem.Read(a+96, make([]byte, 8)); err == nil || !strings.Contains(err.Error(), "run past the end of the 100-byte allocation") {
		t.Errorf("read past the end: %v", err)
	}
	if err := mem.Write(a+100, []byte{1}); err == nil || !strings.Contains(err.Error(), "outside every allocation") {
		t.Errorf("write into the gap: %v", err)
	}
	if err := mem.Set32(a+2, 7, 1); err == nil {
		t.Error("a misaligned memset passed")
	}
	if got := mem.Allocated(); got != 108 {
		t.Errorf("Allocated() = %d, want 108", got)
	}
	if err := mem.Free(a); err != nil || mem.Free(a) == nil || mem.Read(a, make([]byte, 1)) == nil {
		t.Errorf("after Free: %v", err)
	}
}

// TestFallOff: a thread whose last instruction is a guarded ret that does
// not return faults rather than run past the kernel's end.
func TestFallOff(t *testing.T) {
	src := header + ".visible .entry k() {\n\t.reg .pred %p<2>;\n\t@%p1 ret;\n}\n"
	m, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	one := [3]uint32{1, 1, 1}
	_, err = m.Kernels["k"].Launch(NewMemory(), one, one, nil, Limits{})
	if err == nil || !strings.Contains(err.Error(), "line 6 ((end)), block [0 0 0] thread [0 0 0]: the thread ran past the kernel's last instruction") {
		t.Errorf("a thread past the end: %v", err)
	}
}

// TestShuffleModes holds each shfl.sync mode to the PTX ISA's source
// lane: every lane offers its lane number.
func TestShuffleModes(t *testing.T) {
	for _, c := range []struct {
		mode string
		b, c uint32
		want func(lane uint32) uint32
	}{
		{"bfly", 16, 31, func(l uint32) uint32 { return l ^ 16 }},
		{"down", 3, 31, func(l uint32) uint32 { return l + 3*b2u(l+3 <= 31) }}, // past the last lane: its own
		{"up", 2, 0, func(l uint32) uint32 { return l - 2*b2u(l >= 2) }},
		{"idx", 7, 31, func(l uint32) uint32 { return 7 }},
		{"bfly", 1, 0x1c03, func(l uint32) uint32 { return l ^ 1 }},               // segments of 4 lanes
		{"bfly", 4, 0x1c03, func(l uint32) uint32 { return l - 4*b2u(l&4 != 0) }}, // only j ≤ maxLane = (l & 0x1c) | 3 is checked
		{"down", 1, 7, func(l uint32) uint32 { return l + b2u(l < 7) }},           // clamped at lane 7
		{"idx", 2, 0x1803, func(l uint32) uint32 { return l&^7 | 2 }},             // segments of 8 lanes
		{"up", 1, 0x1800, func(l uint32) uint32 { return l - b2u(l&7 >= 1) }},     // segments of 8 lanes
		{"idx", 9, 0x1f, func(l uint32) uint32 { return 9 }},
	} {
		body := fmt.Sprintf("shfl.sync.%s.b32 %%r2, %%r1, %d, %d, -1;\n\tst.global.u32 [%%rd3], %%r2;", c.mode, c.b, c.c)
		m, err := Parse([]byte(faultKernel(body)))
		if err != nil {
			t.Fatal(err)
		}
		mem := NewMemory()
		buf, _ := mem.Alloc(128)
		if _, err := m.Kernels["k"].Launch(mem, [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, [][]byte{le64(buf)}, Limits{}); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 128)
		mem.Read(buf, got)
		for l := range uint32(32) {
			if g := binary.LittleEndian.Uint32(got[4*l:]); g != c.want(l) {
				t.Errorf("shfl.sync.%s b=%d c=%#x: lane %d read lane %d, want %d", c.mode, c.b, c.c, l, g, c.want(l))
			}
		}
	}
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// TestParseShipped parses every shipped optimizer's PTX: each kernel is
// there, with the parameters its manifest's ABI gives.
func TestParseShipped(t *testing.T) {
	files, err := filepath.Glob("../../generated/*/*.ptx")
	if err != nil || len(files) == 0 {
		t.Fatalf("no PTX under generated/: %v", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".ptx")
		if k := m.Kernels[name+"_step"]; k == nil || m.Target != "sm_80" {
			t.Errorf("%s: no kernel %s_step (target %s)", f, name, m.Target)
		}
	}
}

// FuzzParse: no PTX text makes Parse or a launch of what it accepts panic
// (one thread per kernel, zero parameters, a small budget: faults are
// expected, crashes are not).
func FuzzParse(f *testing.F) {
	for _, body := range []string{
		f32Op("add.rn.f32 %f3, %f1, %f2;"), f64Op("min.f64 %fd3, %fd1, %fd2;"), predOp("setp.geu.f64 %p1, %fd1, %fd2;"),
		"mul.wide.u32 %rd4, %r1, %r2;", "div.s64 %rd4, %rd2, %rd3;", "LOOP:\n\tbra.uni LOOP;",
	} {
		f.Add(opKernel(body))
	}
	f.Add(faultKernel("shfl.sync.bfly.b32 %r2, %r1, 1, 31, -1;\n\tatom.global.min.u64 %rd4, [%rd1], %rd2;"))
	f.Add(faultKernel("ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];\n\tst.global.v4.f32 [%rd1+16], {%f1, %f2, %f3, %f4};"))
	f.Fuzz(func(t *testing.T, src string) {
		m, err := Parse([]byte(src))
		if err != nil {
			return
		}
		for _, k := range m.Kernels {
			args := make([][]byte, len(k.Params))
			for i, p := range k.Params {
				args[i] = make([]byte, p.Size)
			}
			one := [3]uint32{1, 1, 1}
			k.Launch(NewMemory(), one, [3]uint32{2, 1, 1}, args, Limits{Instructions: 10000})
		}
	})
}
