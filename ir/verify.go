package ir

import (
	"fmt"
	"slices"

	"github.com/fibergen/fibergen/lang"
)

// Verify checks the invariants every pass must keep: operands are defined
// earlier in the same block, operand types match the op, a value is uniform
// exactly when its operands are (loads are varying), names resolve, and
// every block stores what it must: init every state, observe every
// argument of the observation, step theta and every state.
func Verify(f *Func) error {
	if err := verifyKinds(f); err != nil {
		return fmt.Errorf("ir: %s: %w", f.Name, err)
	}
	for _, b := range f.Blocks() {
		if err := verifyBlock(f, b); err != nil {
			return fmt.Errorf("ir: %s: block %s: %w", f.Name, b.Name, err)
		}
		if err := verifyNames(f, b); err != nil {
			return fmt.Errorf("ir: %s: block %s: %w", f.Name, b.Name, err)
		}
	}
	if err := verifyStorage(f); err != nil {
		return fmt.Errorf("ir: %s: %w", f.Name, err)
	}
	if err := f.verifyPrivatized(); err != nil {
		return fmt.Errorf("ir: %s: %w", f.Name, err)
	}
	return f.verifyDiagnostics()
}

// verifyPrivatized checks that the step of a noise block reads g only
// through its privatize, one at most: no other operation takes the clipped
// mean, which has no noise yet.
func (f *Func) verifyPrivatized() error {
	if f.Noise == nil {
		return nil
	}
	privatizes := 0
	for _, v := range f.Step.Values {
		for i, a := range v.Args {
			if a.Op == OpLoad && a.Name == GradName && (v.Op != OpPrivatize || i != 0) {
				return fmt.Errorf("v%d: %s reads g before its noise is added (only privatize may)", v.ID, v.Op)
			}
		}
		if v.Op == OpPrivatize {
			privatizes++
		}
	}
	if privatizes > 1 { // none: the step never reads g
		return fmt.Errorf("the step of a noise block has %d privatize operations, not 1", privatizes)
	}
	return nil
}

// verifyKinds checks that each block's kind is that of its place in f.
func verifyKinds(f *Func) error {
	want := map[*Block]BlockKind{f.Init: InitBlock, f.ObsArgs: ObserveBlock, f.Step: StepBlock}
	if (f.ScalarInit == nil) != (f.ScalarStep == nil) || (f.ScalarInit == nil) != (len(f.Scalars) == 0) {
		return fmt.Errorf("scalars %v without both their blocks", f.Scalars)
	}
	if f.ScalarInit != nil {
		want[f.ScalarInit], want[f.ScalarStep] = ScalarInitBlock, ScalarStepBlock
	}
	if (f.HyperDefaults == nil) != (len(f.DerivedHypers()) == 0) {
		return fmt.Errorf("derived hypers %v without their block", f.DerivedHypers())
	}
	if f.HyperDefaults != nil {
		want[f.HyperDefaults] = HyperDefaultBlock
	}
	for _, fl := range slices.Concat(f.Filters, f.Varying) {
		want[fl.Model] = ModelBlock
	}
	if f.Noise != nil {
		want[f.Noise.Model] = ModelBlock
		k := len(f.Noise.States)
		if !f.Noise.Noise || k > len(f.States) || !slices.Equal(f.Noise.States, f.States[len(f.States)-k:]) {
			return fmt.Errorf("noise filter of buffers %v is not marked Noise or its buffers are not the last states", f.Noise.States)
		}
	}
	for _, d := range f.Diags {
		want[d.Block] = DiagBlock
	}
	if f.Reduce != nil {
		want[f.Reduce] = ReduceBlock
	}
	for _, b := range f.Blocks() {
		if b.Kind != want[b] {
			return fmt.Errorf("block %s is of kind %s, but it is the %s block", b.Name, b.Kind, want[b])
		}
	}
	return nil
}

func verifyBlock(f *Func, b *Block) error {
	defined := map[*Value]bool{}
	for _, v := range b.Values {
		if v.Op == OpInvalid || v.Op > lastOp {
			return fmt.Errorf("v%d: unknown op %d", v.ID, v.Op)
		}
		if len(v.Args) != v.Op.Arity() {
			return fmt.Errorf("v%d: %s has %d operands", v.ID, v.Op, len(v.Args))
		}
		for _, a := range v.Args {
			if !defined[a] {
				return fmt.Errorf("v%d: operand v%d is not defined before it", v.ID, a.ID)
			}
		}
		if err := verifyValue(f, b, v); err != nil {
			return fmt.Errorf("v%d: %w", v.ID, err)
		}
		defined[v] = true
	}
	return nil
}

func verifyValue(f *Func, b *Block, v *Value) error {
	want, uniform := expectedType(f, b, v), true
	for _, a := range v.Args {
		uniform = uniform && a.Uniform
	}
	switch {
	case v.Op == OpLoad || v.Op == OpDraw || lineReduces[v.Op] != lang.Coords:
		uniform = false
	case v.Op.Arity() == 0 || linesCombines[v.Op] != 0:
		uniform = true
	}
	if v.Type != want {
		return fmt.Errorf("%s has type %s, want %s", v.Op, v.Type, want)
	}
	if v.Uniform != uniform {
		return fmt.Errorf("%s is marked uniform=%v, its operands say %v", v.Op, v.Uniform, uniform)
	}
	if err := verifyAxis(f, b, v); err != nil {
		return err
	}
	return argTypesMatch(v)
}

// expectedType is the type an op yields given its operands.
func expectedType(f *Func, b *Block, v *Value) Type {
	switch v.Op {
	case OpStore:
		return None
	case OpLoad:
		if f.LineState(v.Name) != nil && b.Kind == StepBlock {
			return F64
		}
		return F32
	case OpF32, OpDraw:
		return F32
	case OpHyper, OpStepIndex, OpSigmaW2, OpAtten, OpAttenT, OpScalar, OpReduce, OpReduceMax, OpReduceMin, OpNumel,
		OpReduceRows, OpReduceCols, OpRows, OpCols, OpLinesSum, OpLinesMax, OpLinesMin:
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
	case linesCombines[v.Op] != 0 && !v.Args[0].IsLine():
		return fmt.Errorf("%s of a value that is not per line", v.Op)
	case (v.Op == OpPow || v.Op.lang().HostOnly()) && v.Type != F64:
		return fmt.Errorf("%s on %s (only uniform f64 values have %s)", v.Op, v.Type, v.Op)
	case v.Op == OpConst && v.Type != F32 && v.Type != F64:
		return fmt.Errorf("const of type %s", v.Type)
	case v.Op == OpStore && v.Args[0].Type != F32 && v.Args[0].Type != F64:
		return fmt.Errorf("store of a %s value", v.Args[0].Type)
	}
	for _, a := range v.Args {
		if v.Op != OpF32 && v.Op != OpStore && linesCombines[v.Op] == 0 && a.Type != v.Type {
			return fmt.Errorf("%s mixes %s and %s", v.Op, v.Type, a.Type)
		}
	}
	return nil
}

// verifyAxis checks a value's Axis: a line value's is that of its line
// operands, which agree (a row value with a column value is per
// coordinate, so f32), or the row or column its source says; every other
// value's is lang.Coords but the store of a line state (in the step or
// init block, where b stores states), which carries the state's.
func verifyAxis(f *Func, b *Block, v *Value) error {
	want := lang.Coords
	states := b.Kind == StepBlock || b.Kind == InitBlock // the blocks whose loads and stores name states
	switch {
	case v.Op == OpLoad && f.LineState(v.Name) != nil && b.Kind == StepBlock:
		want = f.LineState(v.Name).Axis
	case lineReduces[v.Op] != lang.Coords:
		want = lineReduces[v.Op]
	case v.Op == OpStore && f.LineState(v.Name) != nil && states:
		want = f.LineState(v.Name).Axis
	case v.IsLine():
		for _, a := range v.Args {
			switch {
			case !a.IsLine():
			case want == lang.Coords:
				want = a.Axis
			case a.Axis != want:
				return fmt.Errorf("%s of a value %s and a value %s", v.Op, want.Per(), a.Axis.Per())
			}
		}
	}
	if v.Axis != want || v.IsLine() && want == lang.Coords {
		return fmt.Errorf("%s is marked %s, want %s", v.Op, v.Axis.Per(), want.Per())
	}
	return nil
}

// verifyNames checks that hypers and loads name what f declares and that
// b stores exactly its targets (the observation's arguments for observe,
// the states and, in step, theta), each once, with the right type.
func verifyNames(f *Func, b *Block) error {
	targets := blockTargets(f, b)
	stored := map[string]bool{}
	for _, v := range b.Values {
		switch {
		case v.Op == OpHyper && f.HyperIndex(v.Name) < 0:
			return fmt.Errorf("v%d: unknown hyper %s", v.ID, v.Name)
		case v.Op == OpLoad && !f.loadable(b, v.Name):
			return fmt.Errorf("v%d: load of %s in block %s", v.ID, v.Name, b.Name)
		case v.Op == OpScalar && (!slices.Contains(f.Scalars, v.Name) || !scalarReader(b.Kind) && !f.varyingModel(b)):
			return fmt.Errorf("v%d: scalar %s in block %s", v.ID, v.Name, b.Name)
		case (v.Op == OpAtten || v.Op == OpAttenT) && (!scalarReader(b.Kind) || f.Filter(v.Name) == nil):
			return fmt.Errorf("v%d: %s of %s, which has no filter, in block %s", v.ID, v.Op, v.Name, b.Name)
		case v.Op == OpAttenT && v.Args[0].Op != OpStepIndex:
			return fmt.Errorf("v%d: %s at a step other than t", v.ID, v.Op)
		case (v.Op.IsReduce() || lineReduces[v.Op] != lang.Coords) && (b.Kind != StepBlock || !slices.Contains(f.ReduceTerms(), v.Name)):
			return fmt.Errorf("v%d: %s %s in block %s, which the reduce block does not store", v.ID, v.Op, v.Name, b.Name)
		case (v.Op == OpNumel || v.Op.CountAxis() != lang.Coords || linesCombines[v.Op] != 0) && b.Kind != StepBlock:
			return fmt.Errorf("v%d: %s in block %s", v.ID, v.Op, b.Name)
		case (v.Op == OpDraw || v.Op == OpPrivatize) && (b.Kind != StepBlock || f.Noise == nil):
			return fmt.Errorf("v%d: %s in block %s of an optimizer without a noise block", v.ID, v.Op, b.Name)
		case v.Op != OpStore:
			continue
		case !slices.Contains(targets, v.Name) || stored[v.Name]:
			return fmt.Errorf("v%d: unexpected store of %s", v.ID, v.Name)
		case v.Args[0].Type != storeType(f, b, v.Name):
			return fmt.Errorf("v%d: store of %s takes %s, not %s", v.ID, v.Name, storeType(f, b, v.Name), v.Args[0].Type)
		case v.Args[0].IsLine() && v.Args[0].Axis != v.Axis:
			return fmt.Errorf("v%d: store of %s, %s, takes a value %s", v.ID, v.Name, v.Axis.Per(), v.Args[0].Axis.Per())
		}
		stored[v.Name] = true
	}
	for _, name := range targets {
		if !stored[name] {
			return fmt.Errorf("no store of %s", name)
		}
	}
	return nil
}

// blockTargets lists what b must store.
func blockTargets(f *Func, b *Block) []string {
	switch b.Kind {
	case ObserveBlock:
		if f.Observe == nil {
			return nil
		}
		return f.Observe.Args
	case StepBlock:
		return slices.Concat([]string{ThetaName}, f.States, f.LineStateNames())
	case InitBlock:
		return slices.Concat(f.States, f.LineStateNames())
	case DiagBlock:
		return DiagTerms
	case ReduceBlock:
		return f.ReduceTerms()
	case ScalarInitBlock, ScalarStepBlock:
		return f.Scalars
	case HyperDefaultBlock:
		return f.DerivedHypers()
	case ModelBlock:
		for _, fl := range append(slices.Concat(f.Filters, f.Varying), f.Noise) {
			if fl != nil && b == fl.Model {
				return fl.EntryNames()
			}
		}
	}
	return nil
}

// EntryNames lists what the model block stores: M row by row, then b.
func (fl *Filter) EntryNames() []string {
	var names []string
	for i := range fl.States {
		for j := range fl.States {
			names = append(names, fmt.Sprintf("m_%d_%d", i, j))
		}
	}
	for i := range fl.States {
		names = append(names, fmt.Sprintf("b_%d", i))
	}
	if !fl.Noise {
		return names
	}
	for i := range fl.States {
		names = append(names, fmt.Sprintf("h_%d", i))
	}
	return append(names, "d")
}

// varyingModel says whether b is the model of a time-varying filter,
// which reads the scalars at the step (Func.Varying).
func (f *Func) varyingModel(b *Block) bool {
	return slices.ContainsFunc(f.Varying, func(fl *Filter) bool { return fl.Model == b })
}

// scalarReader says whether a block of kind k may read the scalars and
// the attenuations: the scalar step (the step before's scalars), the step
// and the diagnostics.
func scalarReader(k BlockKind) bool {
	return k == ScalarStepBlock || k == StepBlock || k == DiagBlock || k == ReduceBlock
}

// storeType is the type of the value b stores in name: the states'
// initial and new values are f32, but a line state's new value, which the
// host computes, is f64; the observation's weights and the models'
// entries are f64.
func storeType(f *Func, b *Block, name string) Type {
	switch {
	case b.Kind == StepBlock && f.LineState(name) != nil:
		return F64
	}
	switch b.Kind {
	case InitBlock, StepBlock, DiagBlock, ReduceBlock:
		return F32
	}
	return F64
}
