package llvmgen

import (
	"fmt"
	"regexp"
	goruntime "runtime"
	"strconv"

	llvm "github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/types"
)

// Field is one field of a struct of the host ABI as this machine's host
// target lays it out.
type Field struct {
	Name         string
	Offset, Size int64 // in bytes
}

// HostStructs names the structs the host functions take: the step's range
// and the privatize phases' arguments (abi.go).
var HostStructs = []string{rangeStruct.tag, privatizeStruct.tag, privatizePieceStruct.tag}

// HostStructLayout asks llc where this machine's host target puts the
// fields of the struct tag (one of HostStructs) and how large the struct
// is: the layout that a mirror of the struct in another language, such as
// package hostkernel's, must have.
func (tc *Toolchain) HostStructLayout(tag string) ([]Field, int64, error) {
	s, ok := map[string]cstruct{rangeStruct.tag: rangeStruct, privatizeStruct.tag: privatizeStruct,
		privatizePieceStruct.tag: privatizePieceStruct}[tag]
	target, known := hostTargets[goruntime.GOARCH]
	switch {
	case !ok:
		return nil, 0, fmt.Errorf("no host struct %s (want one of %v)", tag, HostStructs)
	case !known:
		return nil, 0, fmt.Errorf("no host target for %s", goruntime.GOARCH)
	}
	asm, err := run(tc.LLC, []byte(layoutModule(s, target).String()), "-O0", "-filetype=asm", "-o", "-")
	if err != nil {
		return nil, 0, err
	}
	vals := layoutValues.FindAllSubmatch(asm, -1)
	if len(vals) != 2*len(s.fields)+1 {
		return nil, 0, fmt.Errorf("llc's layout of %s: %d values, want %d", tag, len(vals), 2*len(s.fields)+1)
	}
	num := func(i int) int64 { n, _ := strconv.ParseInt(string(vals[i][1]), 10, 64); return n }
	out := make([]Field, len(s.fields))
	for i, f := range s.fields {
		out[i] = Field{Name: f.ident(), Offset: num(2 * i), Size: num(2*i + 1)}
	}
	return out, num(2 * len(s.fields)), nil
}

// layoutValues matches the 64-bit values of the layout module's global,
// which llc writes as N or 0+N, after .quad on x86-64 and .xword on arm64.
var layoutValues = regexp.MustCompile(`(?m)^\s*\.(?:quad|xword)\s+(?:0\+)?([0-9]+)\b`)

// layoutModule is a module for target whose one global holds, as constant
// expressions that llc folds, each field's offset and size in s, then the
// size of s.
func layoutModule(s cstruct, target [2]string) *llvm.Module {
	m := llvm.NewModule()
	m.TargetTriple, m.DataLayout = target[0], target[1]
	sizeOf := func(t types.Type) constant.Constant {
		return constant.NewPtrToInt(constant.NewGetElementPtr(t, constant.NewNull(types.NewPointer(t)), i64c(1)), i64)
	}
	var vals []constant.Constant
	for i, f := range s.fields {
		field := constant.NewGetElementPtr(s.ll, constant.NewNull(types.NewPointer(s.ll)), i32c(0), i32c(uint32(i)))
		vals = append(vals, constant.NewPtrToInt(field, i64), sizeOf(f.typ.ll))
	}
	vals = append(vals, sizeOf(s.ll))
	m.NewGlobalDef("layout", constant.NewArray(types.NewArray(uint64(len(vals)), i64), vals...))
	return m
}
