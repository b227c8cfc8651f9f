package ir

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/fibergen/fibergen/lang"
)

// String returns the canonical text dump of f: its hypers and states, then
// each block with values renumbered in order. Passes are tested by comparing
// dumps before and after.
func (f *Func) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "optimizer %s\n", f.Name)
	for _, h := range f.Hypers {
		fmt.Fprintf(&b, "hyper %s = %s", h.Name, FormatConst(h.Default, F64))
		if h.Range != nil {
			fmt.Fprintf(&b, " in %s", h.Range)
		}
		if h.Alias != nil {
			fmt.Fprintf(&b, " alias %s", h.Alias)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "states %s\n", strings.Join(f.States, " "))
	for _, s := range f.LineStates {
		fmt.Fprintf(&b, "state %s: %s\n", s.Name, s.Axis)
	}
	b.WriteString(dumpStorage(f))
	if f.Noise != nil {
		fmt.Fprintf(&b, "noise buffers %s\n", strings.Join(f.Noise.States, " "))
	}
	if len(f.Scalars) > 0 {
		fmt.Fprintf(&b, "scalars %s\n", strings.Join(f.Scalars, " "))
	}
	if f.Observe != nil {
		fmt.Fprintf(&b, "observe %s(%s)\n", f.Observe.Kind, strings.Join(f.Observe.Args, ", "))
	}
	for _, d := range f.Diags {
		fmt.Fprintf(&b, "diagnostic %s(%s)\n", d.Kind, strings.Join(d.Args, ", "))
	}
	for _, blk := range f.Blocks() {
		b.WriteString(blk.String())
	}
	return b.String()
}

// String dumps one block. Each line is "u" (uniform), "v" (varying), or
// "rows" or "cols" (a line value, the store of a line state), the value,
// its type, the op and its operands.
func (b *Block) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "%s:\n", b.Name)
	num := map[*Value]int{}
	for _, v := range b.Values {
		num[v] = len(num)
		s.WriteString("  " + formatValue(v, num) + "\n")
	}
	return s.String()
}

func formatValue(v *Value, num map[*Value]int) string {
	class := "v"
	switch {
	case v.Axis != lang.Coords:
		class = v.Axis.String()
	case v.Uniform:
		class = "u"
	}
	var ops []string
	for _, a := range v.Args {
		ops = append(ops, fmt.Sprintf("%%%d", num[a]))
	}
	operand := strings.Join(ops, ", ")
	switch v.Op {
	case OpConst:
		operand = FormatConst(v.Const, v.Type)
	case OpHyper, OpLoad, OpScalar, OpReduce, OpReduceMax, OpReduceMin, OpReduceRows, OpReduceCols:
		operand = v.Name
	case OpStore:
		return fmt.Sprintf("%s store %s, %s", class, v.Name, operand)
	case OpSelect:
		if v.Name != "" { // the start of a state (StartOf)
			operand += " start " + v.Name
		}
	}
	return strings.TrimSpace(fmt.Sprintf("%s %%%d:%s = %s %s", class, num[v], v.Type, v.Op, operand))
}

// FormatConst prints a constant so that it parses back to the same bits in
// its type: the shortest round-tripping decimal, or inf/-inf/nan.
func FormatConst(c float64, t Type) string {
	switch {
	case math.IsNaN(c):
		return "nan"
	case math.IsInf(c, 1):
		return "inf"
	case math.IsInf(c, -1):
		return "-inf"
	case t == F32:
		return strconv.FormatFloat(c, 'g', -1, 32)
	}
	return strconv.FormatFloat(c, 'g', -1, 64)
}
