package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/pipeline"
)

func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	showIR := fs.Bool("ir", false, "include the IR dump")
	asJSON := fs.Bool("json", false, "print JSON")
	var sets listFlag
	fs.Var(&sets, "set", "override a hyper: name=value (repeatable)")
	files, ok := parseFlags(fs, args, stderr)
	switch {
	case !ok:
		return 2
	case len(files) != 1:
		return usageError(stderr, "explain", "want exactly one .dsl file, got %d", len(files))
	}
	u := compileFile(files[0], stderr)
	if u == nil {
		return 1
	}
	h, err := u.Func.ApplySettings(sets)
	if err != nil {
		return fail(stderr, "explain", err)
	}
	x, err := describeUnit(u, h)
	if err != nil {
		return fail(stderr, "explain", err)
	}
	if *showIR {
		x.IR = u.Func.String()
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(x)
		return 0
	}
	printExplanation(stdout, x)
	return 0
}

// explanation is what explain reports; its JSON form is the --json output.
type explanation struct {
	Optimizer   string                `json:"optimizer"`
	Source      string                `json:"source"`
	Hypers      []hyperInfo           `json:"hypers"`
	States      []stateInfo           `json:"states"`
	Observe     *observeInfo          `json:"observe,omitempty"`
	HostScalars []scalarInfo          `json:"host_scalars"`
	Kernel      kernelInfo            `json:"kernel"`
	Attenuation map[string]*attenInfo `json:"attenuation"`
	Step        string                `json:"step"`
	IR          string                `json:"ir,omitempty"`

	notLinear map[string]string // the human form says why a state has no attenuation
}

type hyperInfo struct {
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Default float64 `json:"default"`
	Range   string  `json:"range,omitempty"`
}

type stateInfo struct {
	Name string  `json:"name"`
	Init float32 `json:"init"`
}

type observeInfo struct {
	Kind string      `json:"kind"`
	Args []valueInfo `json:"args"`
}

type valueInfo struct {
	Name  string  `json:"name"`
	Expr  string  `json:"expr"`
	Value float64 `json:"value"`
}

// scalarInfo is a host scalar; Value is given when it depends on hypers only.
type scalarInfo struct {
	Name    string   `json:"name"`
	Expr    string   `json:"expr"`
	PerStep bool     `json:"per_step"`
	Value   *float32 `json:"value,omitempty"`
}

type kernelInfo struct {
	Reads      []string `json:"reads"`
	Writes     []string `json:"writes"`
	Operations int      `json:"operations"`
}

func describeUnit(u *pipeline.Unit, h []float64) (*explanation, error) {
	p, err := interp.New(u.Func)
	if err != nil {
		return nil, err
	}
	x := &explanation{Optimizer: u.Func.Name, Source: u.Path, Step: stepText(u)}
	for i, hy := range u.Func.Hypers {
		r := ""
		if hy.Range != nil {
			r = hy.Range.String()
		}
		x.Hypers = append(x.Hypers, hyperInfo{hy.Name, h[i], hy.Default, r})
	}
	x.States = describeStates(p, h)
	x.Observe = describeObserve(u.Func, p, h)
	x.HostScalars = describeScalars(u.Func, p, h)
	x.Kernel = describeKernel(u.Func.Step)
	x.Attenuation, x.notLinear = describeAttenuation(u.Func, u.Noise, h)
	return x, nil
}

func describeStates(p *interp.Program, h []float64) []stateInfo {
	bufs := make([][]float32, p.NumStates())
	for i := range bufs {
		bufs[i] = make([]float32, 1)
	}
	p.Init(h, bufs) // h comes from ApplySettings, bufs from NumStates: cannot fail
	out := []stateInfo{}
	for i, name := range p.Func.States {
		out = append(out, stateInfo{name, bufs[i][0]})
	}
	return out
}

func describeObserve(fn *ir.Func, p *interp.Program, h []float64) *observeInfo {
	if fn.Observe == nil {
		return nil
	}
	o := &observeInfo{Kind: fn.Observe.Kind}
	vals := p.Observe(h, 0)
	for i, s := range fn.ObsArgs.Stores() {
		o.Args = append(o.Args, valueInfo{s.Name, ir.ExprString(s.Args[0]), vals[i]})
	}
	return o
}

func describeScalars(fn *ir.Func, p *interp.Program, h []float64) []scalarInfo {
	sc := p.HostScalars(h, 0, 0)
	out := []scalarInfo{}
	for i, v := range ir.HostScalars(fn.Step) {
		s := scalarInfo{Name: fmt.Sprintf("S%d", i), Expr: ir.ExprString(v), PerStep: ir.DependsOnStep(v)}
		if !s.PerStep {
			val := sc.Value(v)
			s.Value = &val
		}
		out = append(out, s)
	}
	return out
}

func describeKernel(b *ir.Block) kernelInfo {
	k := kernelInfo{Reads: []string{}, Writes: []string{}}
	for _, v := range b.Values {
		switch {
		case v.Op == ir.OpLoad:
			k.Reads = append(k.Reads, v.Name)
		case v.Op == ir.OpStore:
			k.Writes = append(k.Writes, v.Name)
		case !v.Uniform:
			k.Operations++
		}
	}
	return k
}

func stepText(u *pipeline.Unit) string {
	text := string(u.Canonical)
	if i := strings.Index(text, "step {"); i >= 0 {
		return text[i:]
	}
	return text
}

func printExplanation(w io.Writer, x *explanation) {
	fmt.Fprintf(w, "optimizer %s (%s)\n\nhypers:\n", x.Optimizer, x.Source)
	for _, h := range x.Hypers {
		fmt.Fprintf(w, "  %-10s = %-12g default %g %s\n", h.Name, h.Value, h.Default, h.Range)
	}
	fmt.Fprintf(w, "\nstates (per coordinate, float32):\n")
	for _, s := range x.States {
		fmt.Fprintf(w, "  %-10s initial %g\n", s.Name, s.Init)
	}
	if o := x.Observe; o != nil {
		fmt.Fprintf(w, "\nobserve %s (host, per step):\n", o.Kind)
		for _, a := range o.Args {
			fmt.Fprintf(w, "  %-10s = %s = %g at t = 0\n", a.Name, a.Expr, a.Value)
		}
	}
	fmt.Fprintf(w, "\nhost scalars (uniform: computed once per step in float64, passed to the kernel as float32):\n")
	for _, s := range x.HostScalars {
		val := "varies with t or sigma_w2"
		if s.Value != nil {
			val = fmt.Sprintf("= %g", *s.Value)
		}
		fmt.Fprintf(w, "  %-4s = %-40s %s\n", s.Name, s.Expr, val)
	}
	printAttenuation(w, x)
	k := x.Kernel
	fmt.Fprintf(w, "\nkernel (varying: per coordinate, float32): reads %s; writes %s; %d operations\n\n%s",
		strings.Join(k.Reads, " "), strings.Join(k.Writes, " "), k.Operations, x.Step)
	if x.IR != "" {
		fmt.Fprintf(w, "\nIR:\n%s", x.IR)
	}
}
