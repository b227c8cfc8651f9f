package ir

import "fmt"

// Verify checks the invariants every pass must keep: operands are defined
// earlier in the same block, operand types match the op, a value is uniform
// exactly when its operands are (loads are varying), and every block stores
// what it must.
func Verify(f *Func) error {
	for _, b := range f.Blocks() {
		if err := verifyBlock(b); err != nil {
			return fmt.Errorf("ir: %s: block %s: %v", f.Name, b.Name, err)
		}
	}
	return nil
}

func verifyBlock(b *Block) error {
	defined := map[*Value]bool{}
	for _, v := range b.Values {
		if len(v.Args) != v.Op.Arity() {
			return fmt.Errorf("v%d: %s has %d operands", v.ID, v.Op, len(v.Args))
		}
		for _, a := range v.Args {
			if !defined[a] {
				return fmt.Errorf("v%d: operand v%d is not defined before it", v.ID, a.ID)
			}
		}
		if err := verifyValue(v); err != nil {
			return fmt.Errorf("v%d: %v", v.ID, err)
		}
		defined[v] = true
	}
	return nil
}

func verifyValue(v *Value) error {
	want, uniform := expectedType(v), true
	for _, a := range v.Args {
		uniform = uniform && a.Uniform
	}
	switch {
	case v.Op == OpLoad:
		uniform = false
	case v.Op.Arity() == 0:
		uniform = true
	}
	if v.Type != want {
		return fmt.Errorf("%s has type %s, want %s", v.Op, v.Type, want)
	}
	if v.Uniform != uniform {
		return fmt.Errorf("%s is marked uniform=%v, its operands say %v", v.Op, v.Uniform, uniform)
	}
	return argTypesMatch(v)
}

// expectedType is the type an op yields given its operands.
func expectedType(v *Value) Type {
	switch v.Op {
	case OpStore:
		return None
	case OpF32, OpLoad:
		return F32
	case OpHyper, OpStepIndex, OpSigmaW2:
		return F64
	case OpConst:
		return v.Type
	}
	return v.Args[0].Type
}

func argTypesMatch(v *Value) error {
	switch {
	case v.Op == OpF32 && v.Args[0].Type != F64:
		return fmt.Errorf("f32 of a %s value", v.Args[0].Type)
	case v.Op == OpPow && v.Type != F64:
		return fmt.Errorf("pow on %s (only uniform f64 values have pow)", v.Type)
	case v.Op == OpConst && v.Type == None:
		return fmt.Errorf("const without type")
	}
	for _, a := range v.Args {
		if v.Op != OpF32 && v.Op != OpStore && a.Type != v.Type {
			return fmt.Errorf("%s mixes %s and %s", v.Op, v.Type, a.Type)
		}
	}
	return nil
}
