package ir

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/fibergen/fibergen/lang"
)

// This file is the JSON form of a Func: the "ir" member of a manifest, from
// which a runtime rebuilds the optimizer — hypers and their ranges, the
// blocks that initialize the states and compute the host scalars, the
// filters whose stability it checks — without the DSL or LLVM.

type funcJSON struct {
	Name          string             `json:"name"`
	Hypers        []hyperJSON        `json:"hypers"`
	States        []string           `json:"states"`
	LineStates    []lineStateJSON    `json:"line_states,omitempty"`
	Storage       map[string]Storage `json:"storage,omitempty"`
	Observe       *Observation       `json:"observe,omitempty"`
	Init          *blockJSON         `json:"init"`
	ObsArgs       *blockJSON         `json:"observe_args"`
	Step          *blockJSON         `json:"step"`
	Filters       []filterJSON       `json:"filters,omitempty"`
	Varying       []filterJSON       `json:"varying_filters,omitempty"`
	Diags         []diagJSON         `json:"diagnostics,omitempty"`
	Scalars       []string           `json:"scalars,omitempty"`
	ScalarInit    *blockJSON         `json:"scalar_init,omitempty"`
	ScalarStep    *blockJSON         `json:"scalar_step,omitempty"`
	HyperDefaults *blockJSON         `json:"hyper_defaults,omitempty"`
	Noise         *filterJSON        `json:"noise,omitempty"`
	Reduce        *blockJSON         `json:"reduce,omitempty"`
}

// lineStateJSON is a LineState, its axis as the DSL writes it.
type lineStateJSON struct {
	Name string `json:"name"`
	Axis string `json:"axis"` // rows or cols
}

type diagJSON struct {
	Kind  string     `json:"kind"`
	Args  []string   `json:"args"`
	Block *blockJSON `json:"block"`
}

type hyperJSON struct {
	Name    string     `json:"name"`
	Default jsonFloat  `json:"default"`
	Range   *rangeJSON `json:"range,omitempty"`
	Derived bool       `json:"derived,omitempty"`
	Alias   *Alias     `json:"alias,omitempty"`
}

type rangeJSON struct {
	Lo     string `json:"lo"` // as written in the DSL: "0", "inf", "-inf"
	Hi     string `json:"hi"`
	LoOpen bool   `json:"lo_open"`
	HiOpen bool   `json:"hi_open"`
}

type blockJSON struct {
	Name   string      `json:"name"`
	Values []valueJSON `json:"values"`
}

// valueJSON is one value; Args are indexes of earlier values of the block.
type valueJSON struct {
	Op      string     `json:"op"`
	Type    string     `json:"type"`
	Uniform bool       `json:"uniform,omitempty"`
	Args    []int      `json:"args,omitempty"`
	Const   *jsonFloat `json:"const,omitempty"`
	Name    string     `json:"name,omitempty"`
	Axis    string     `json:"axis,omitempty"` // rows or cols: a line value, or the store of a line state
}

type filterJSON struct {
	State     string     `json:"state"`
	States    []string   `json:"states"`
	Target    int        `json:"target"`
	Model     *blockJSON `json:"model"`
	Expr      string     `json:"expr,omitempty"`
	Stability []string   `json:"stability,omitempty"`
	Bounded   bool       `json:"bounded,omitempty"`
	Limit     bool       `json:"limit,omitempty"`
	Start     string     `json:"start,omitempty"`
}

// jsonFloat is a float64 that JSON carries as a number when finite and as
// the string "+Inf", "-Inf" or "NaN" otherwise.
type jsonFloat float64

func (x jsonFloat) MarshalJSON() ([]byte, error) {
	f := float64(x)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return json.Marshal(strconv.FormatFloat(f, 'g', -1, 64))
	}
	return []byte(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

func (x *jsonFloat) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		s = string(b)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("ir: bad number %s", b)
	}
	*x = jsonFloat(f)
	return nil
}

// MarshalJSON encodes f; UnmarshalFunc decodes it.
func (f *Func) MarshalJSON() ([]byte, error) {
	j := funcJSON{Name: f.Name, States: f.States, Storage: f.Storage, Observe: f.Observe,
		Init: encodeBlock(f.Init), ObsArgs: encodeBlock(f.ObsArgs), Step: encodeBlock(f.Step)}
	for _, h := range f.Hypers {
		j.Hypers = append(j.Hypers, encodeHyper(h))
	}
	for _, s := range f.LineStates {
		j.LineStates = append(j.LineStates, lineStateJSON{Name: s.Name, Axis: s.Axis.String()})
	}
	for _, fl := range f.Filters {
		j.Filters = append(j.Filters, encodeFilter(fl))
	}
	for _, fl := range f.Varying {
		j.Varying = append(j.Varying, encodeFilter(fl))
	}
	if f.Noise != nil {
		nj := encodeFilter(f.Noise)
		j.Noise = &nj
	}
	for _, d := range f.Diags {
		j.Diags = append(j.Diags, diagJSON{Kind: d.Kind, Args: d.Args, Block: encodeBlock(d.Block)})
	}
	if f.Reduce != nil {
		j.Reduce = encodeBlock(f.Reduce)
	}
	if f.ScalarInit != nil {
		j.Scalars, j.ScalarInit, j.ScalarStep = f.Scalars, encodeBlock(f.ScalarInit), encodeBlock(f.ScalarStep)
	}
	if f.HyperDefaults != nil {
		j.HyperDefaults = encodeBlock(f.HyperDefaults)
	}
	return json.Marshal(j)
}

func encodeFilter(fl *Filter) filterJSON {
	return filterJSON{State: fl.State, States: fl.States, Target: fl.Target,
		Model: encodeBlock(fl.Model), Expr: fl.Expr, Stability: fl.Stability, Bounded: fl.Bounded, Limit: fl.Limit, Start: fl.Start}
}

func encodeHyper(h Hyper) hyperJSON {
	j := hyperJSON{Name: h.Name, Default: jsonFloat(h.Default), Derived: h.Derived, Alias: h.Alias}
	if r := h.Range; r != nil {
		j.Range = &rangeJSON{Lo: r.LoLit, Hi: r.HiLit, LoOpen: r.LoOpen, HiOpen: r.HiOpen}
	}
	return j
}

func encodeBlock(b *Block) *blockJSON {
	j := &blockJSON{Name: b.Name}
	index := map[*Value]int{}
	for i, v := range b.Values {
		index[v] = i
		vj := valueJSON{Op: v.Op.String(), Type: v.Type.String(), Uniform: v.Uniform, Name: v.Name}
		if v.Axis != lang.Coords {
			vj.Axis = v.Axis.String()
		}
		for _, a := range v.Args {
			vj.Args = append(vj.Args, index[a])
		}
		if v.Op == OpConst {
			c := jsonFloat(v.Const)
			vj.Const = &c
		}
		j.Values = append(j.Values, vj)
	}
	return j
}

// UnmarshalFunc decodes a Func encoded by MarshalJSON and verifies it.
func UnmarshalFunc(data []byte) (*Func, error) {
	var j funcJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("ir: %w", err)
	}
	f := &Func{Name: j.Name, States: j.States, Storage: j.Storage, Observe: j.Observe}
	for _, h := range j.Hypers {
		hy, err := decodeHyper(h)
		if err != nil {
			return nil, err
		}
		f.Hypers = append(f.Hypers, hy)
	}
	for _, s := range j.LineStates {
		axis, ok := lang.AxisWords[s.Axis]
		if !ok {
			return nil, fmt.Errorf("ir: line state %s: unknown axis %q (want rows or cols)", s.Name, s.Axis)
		}
		f.LineStates = append(f.LineStates, LineState{Name: s.Name, Axis: axis})
	}
	var err error
	for _, b := range []struct {
		dst  **Block
		src  *blockJSON
		kind BlockKind
	}{{&f.Init, j.Init, InitBlock}, {&f.ObsArgs, j.ObsArgs, ObserveBlock}, {&f.Step, j.Step, StepBlock}} {
		if *b.dst, err = decodeBlock(b.src, b.kind); err != nil {
			return nil, err
		}
	}
	if f.Filters, err = decodeFilters(j.Filters); err != nil {
		return nil, err
	}
	if f.Varying, err = decodeFilters(j.Varying); err != nil {
		return nil, err
	}
	if j.Noise != nil {
		fl, err := decodeFilter(*j.Noise)
		if err != nil {
			return nil, err
		}
		f.Noise, fl.Noise = fl, true
	}
	if j.HyperDefaults != nil {
		if f.HyperDefaults, err = decodeBlock(j.HyperDefaults, HyperDefaultBlock); err != nil {
			return nil, err
		}
	}
	if j.ScalarInit != nil || j.ScalarStep != nil {
		f.Scalars = j.Scalars
		if f.ScalarInit, err = decodeBlock(j.ScalarInit, ScalarInitBlock); err != nil {
			return nil, err
		}
		if f.ScalarStep, err = decodeBlock(j.ScalarStep, ScalarStepBlock); err != nil {
			return nil, err
		}
	}
	for _, dj := range j.Diags {
		b, err := decodeBlock(dj.Block, DiagBlock)
		if err != nil {
			return nil, err
		}
		f.Diags = append(f.Diags, &Diagnostic{Kind: dj.Kind, Args: dj.Args, Block: b})
	}
	if j.Reduce != nil {
		if f.Reduce, err = decodeBlock(j.Reduce, ReduceBlock); err != nil {
			return nil, err
		}
	}
	if err := Verify(f); err != nil {
		return nil, err
	}
	return f, nil
}

func decodeHyper(h hyperJSON) (Hyper, error) {
	hy := Hyper{Name: h.Name, Default: float64(h.Default), Derived: h.Derived, Alias: h.Alias}
	if r := h.Range; r != nil {
		lo, err1 := strconv.ParseFloat(r.Lo, 64)
		hi, err2 := strconv.ParseFloat(r.Hi, 64)
		if err1 != nil || err2 != nil {
			return hy, fmt.Errorf("ir: hyper %s: bad range [%q, %q]", h.Name, r.Lo, r.Hi)
		}
		hy.Range = &lang.Interval{Lo: lo, Hi: hi, LoLit: r.Lo, HiLit: r.Hi, LoOpen: r.LoOpen, HiOpen: r.HiOpen}
	}
	return hy, nil
}

func decodeFilters(filters []filterJSON) ([]*Filter, error) {
	var out []*Filter
	for _, fj := range filters {
		fl, err := decodeFilter(fj)
		if err != nil {
			return nil, err
		}
		if fj.Target < 0 || fj.Target >= len(fj.States) {
			return nil, fmt.Errorf("ir: filter of %s: target %d out of range", fj.State, fj.Target)
		}
		out = append(out, fl)
	}
	return out, nil
}

func decodeFilter(fj filterJSON) (*Filter, error) {
	model, err := decodeBlock(fj.Model, ModelBlock)
	if err != nil {
		return nil, err
	}
	return &Filter{State: fj.State, States: fj.States, Target: fj.Target,
		Model: model, Expr: fj.Expr, Stability: fj.Stability, Bounded: fj.Bounded, Limit: fj.Limit, Start: fj.Start}, nil
}

// decodeBlock rebuilds a block; operands must refer to earlier values.
func decodeBlock(j *blockJSON, kind BlockKind) (*Block, error) {
	if j == nil {
		return nil, fmt.Errorf("ir: a block is missing")
	}
	b := &Block{Name: j.Name, Kind: kind}
	for i, vj := range j.Values {
		op, typ, ok := opNamed(vj.Op), typeNamed(vj.Type), true
		if op == OpInvalid || typ > F64 {
			return nil, fmt.Errorf("ir: block %s: value %d: unknown op %q or type %q", j.Name, i, vj.Op, vj.Type)
		}
		var args []*Value
		for _, a := range vj.Args {
			ok = ok && a >= 0 && a < i
			if ok {
				args = append(args, b.Values[a])
			}
		}
		if !ok {
			return nil, fmt.Errorf("ir: block %s: value %d: operand out of order", j.Name, i)
		}
		v := b.NewValue(op, typ, vj.Uniform, args...)
		v.Name = vj.Name
		if vj.Axis != "" {
			if v.Axis, ok = lang.AxisWords[vj.Axis]; !ok {
				return nil, fmt.Errorf("ir: block %s: value %d: unknown axis %q (want rows or cols)", j.Name, i, vj.Axis)
			}
		}
		if vj.Const != nil {
			v.Const = float64(*vj.Const)
		}
	}
	return b, nil
}

func opNamed(name string) Op {
	for op := OpInvalid + 1; op <= lastOp; op++ {
		if op.String() == name {
			return op
		}
	}
	return OpInvalid
}

func typeNamed(name string) Type {
	for t := None; t <= F64; t++ {
		if t.String() == name {
			return t
		}
	}
	return F64 + 1
}
