package interp_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fibergen/fibergen/ir/interp"
	"github.com/fibergen/fibergen/lang"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/reduce"
)

// linesSrc has a state per row, one per column and one per coordinate: a
// factored second moment (Adafactor's), a row value read per coordinate,
// and reductions of line values over the tensor.
const linesSrc = `optimizer lines
hyper lr = 0.01
hyper beta2 = 0.9
hyper eps1 = 1e-3
state r: rows = 0
state c: cols = 1
state m = 0
step {
	r = beta2 * r + (1 - beta2) * rowmean(g * g + eps1)
	c = beta2 * c + (1 - beta2) * colmean(g * g + eps1)
	rn = r / mean(r)
	v = rn * c
	m = 0.5 * m + g / sqrt(v)
	theta = theta - lr * m / max(1, norm(rn) + max(c) - min(rn))
}
`

// checked prepares src, which fibergen checks but does not build, for
// interpretation.
func checked(t *testing.T, src string) *interp.Program {
	t.Helper()
	u, errs, err := pipeline.Check("test.dsl", []byte(src))
	if len(errs) > 0 || err != nil {
		t.Fatalf("Check: %v %v\n%s", errs, err, src)
	}
	p, err := interp.New(u.Func)
	if err != nil {
		t.Fatalf("interp.New: %v", err)
	}
	return p
}

// linesRef is linesSrc's step written out by hand from docs/dsl.md, "Rows
// and columns": the line values in float64 on the host, the sums in the
// documented order, the rest per coordinate in float32.
type linesRef struct {
	rows, cols int
	r, c, m    []float32
}

func (s *linesRef) step(theta, g []float32) {
	lr, beta2, eps1 := 0.01, 0.9, 1e-3 // variables: 1 - beta2 in float64, not exactly
	term := func(i int) float32 { return g[i]*g[i] + float32(eps1) }
	rn, cn := make([]float64, s.rows), make([]float64, s.cols)
	for i := range s.rows {
		row := func(j int) float32 { return term(i*s.cols + j) }
		var sum float64
		for k := range reduce.ReduceChunks(s.cols) {
			sum += float64(reduce.SumChunk(k, s.cols, row))
		}
		rn[i] = beta2*float64(s.r[i]) + (1-beta2)*(sum/float64(s.cols))
	}
	for j := range s.cols {
		var sum float64
		for k := 0; k < s.rows; k += reduce.LineChunk {
			var acc float32
			for i := k; i < min(k+reduce.LineChunk, s.rows); i++ {
				acc += term(i*s.cols + j)
			}
			sum += float64(acc)
		}
		cn[j] = beta2*float64(s.c[j]) + (1-beta2)*(sum/float64(s.rows))
	}
	var sumR float64
	for _, x := range rn {
		sumR += x
	}
	norm, maxC, minRn := 0.0, math.Inf(-1), math.Inf(1)
	for i := range rn {
		x := rn[i] / (sumR / float64(s.rows))
		norm += x * x
		minRn = lang.MinOf(minRn, x)
		s.r[i], rn[i] = float32(rn[i]), x
	}
	for j, x := range cn {
		maxC = lang.MaxOf(maxC, x)
		s.c[j] = float32(x)
	}
	d := float32(lang.MaxOf(1, math.Sqrt(norm)+maxC-minRn))
	for i := range theta {
		v := float32(rn[i/s.cols]) * float32(cn[i%s.cols])
		s.m[i] = 0.5*s.m[i] + g[i]/float32(math.Sqrt(float64(v)))
		theta[i] -= float32(lr) * s.m[i] / d
	}
}

// TestLinesBitForBit holds the interpreter to linesRef over three steps at
// shapes that straddle the reductions' chunks: one row, one column, rows
// of more than one chunk (reduce.ReduceChunk), columns of more than one
// (reduce.LineChunk).
func TestLinesBitForBit(t *testing.T) {
	p := checked(t, linesSrc)
	for _, sh := range []interp.Shape{{1, 7}, {7, 1}, {3, 5}, {130, 3}, {2, reduce.ReduceChunk + 5}} {
		t.Run(fmt.Sprintf("%dx%d", sh.Rows, sh.Cols), func(t *testing.T) {
			n := sh.Rows * sh.Cols
			rnd := rand.New(rand.NewPCG(1, uint64(n)))
			theta, grads := make([]float32, n), make([]float32, 3*n)
			for i := range theta {
				theta[i] = float32(rnd.NormFloat64())
			}
			for i := range grads {
				grads[i] = float32(rnd.NormFloat64())
			}
			ref := &linesRef{rows: sh.Rows, cols: sh.Cols, r: make([]float32, sh.Rows), c: make([]float32, sh.Cols), m: make([]float32, n)}
			for j := range ref.c {
				ref.c[j] = 1
			}
			want := append([]float32(nil), theta...)
			for k := range 3 {
				ref.step(want, grads[k*n:(k+1)*n])
			}
			e := interp.Engine{P: p, Hypers: p.Func.DefaultHypers(), Shape: sh}
			states, err := e.Run(theta, grads, 0)
			if err != nil {
				t.Fatal(err)
			}
			for name, pair := range map[string][2][]float32{"theta": {theta, want}, "m": {states[0], ref.m}, "r": {states[1], ref.r}, "c": {states[2], ref.c}} {
				for i := range pair[1] {
					if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
						t.Fatalf("%s[%d] = %v, want %v", name, i, pair[0][i], pair[1][i])
					}
				}
			}
		})
	}
}

// TestLinesErrors: a shape that does not hold the coordinates, line
// states of the wrong length, and a step without a tensor are errors,
// not panics, and change nothing.
func TestLinesErrors(t *testing.T) {
	p := checked(t, linesSrc)
	h := p.Func.DefaultHypers()
	theta, g := []float32{1, 2, 3, 4, 5, 6}, []float32{1, 1, 1, 1, 1, 1}
	if _, err := (interp.Engine{P: p, Hypers: h, Shape: interp.Shape{Rows: 4, Cols: 2}}).Run(theta, g, 0); err == nil {
		t.Error("Run of 6 coordinates as 4 × 2: no error")
	}
	short := interp.Engine{P: p, Hypers: h, Shape: interp.Shape{Rows: 2, Cols: 3}, Lines: [][]float32{make([]float32, 2), make([]float32, 2)}}
	if err := short.Step(0, 0, theta, g, newStates(p, 6)); err == nil {
		t.Error("Step with a column state of 2 values for 3 columns: no error")
	}
	before := append([]float32(nil), theta...)
	if err := p.Step(p.HostScalars(h, 0, 0), nil, theta, g, newStates(p, 6)); err == nil {
		t.Error("Step without a tensor: no error")
	}
	for i := range theta {
		if theta[i] != before[i] {
			t.Fatalf("a refused step changed theta[%d]", i)
		}
	}
}

// hostMathSrc applies the one-operand functions and powers to line values
// of two lengths: each is computed on the host, in float64, per line.
const hostMathSrc = `optimizer hostmath
state r: rows = 1
state c: cols = 0
step {
	r = sqrt(r) + abs(-rowmean(g)) + r ** 0.5
	c = exp(-c) - sign(colsum(g)) + 2 ** c
	theta = theta - 0.1 * r * c
}
`

// TestLinesHostMath holds hostMathSrc to the same computation written out,
// at shapes whose rows and columns differ in number either way (a
// one-operand function once read a second operand of another length).
func TestLinesHostMath(t *testing.T) {
	p := checked(t, hostMathSrc)
	for _, sh := range []interp.Shape{{2, 5}, {5, 2}, {1, 3}} {
		n := sh.Rows * sh.Cols
		rnd := rand.New(rand.NewPCG(3, uint64(n)))
		theta, g := make([]float32, n), make([]float32, n)
		for i := range theta {
			theta[i], g[i] = float32(rnd.NormFloat64()), float32(rnd.NormFloat64())
		}
		want := append([]float32(nil), theta...)
		rs, cs := make([]float64, sh.Rows), make([]float64, sh.Cols)
		for i := range rs {
			row := func(j int) float32 { return g[i*sh.Cols+j] }
			sum := float64(reduce.SumChunk(0, sh.Cols, row)) / float64(sh.Cols)
			rs[i] = math.Sqrt(1) + math.Abs(-sum) + math.Pow(1, 0.5)
		}
		for j := range cs {
			var acc float32
			for i := range sh.Rows {
				acc += g[i*sh.Cols+j]
			}
			cs[j] = lang.HostExp(-0) - lang.SignOf(float64(acc)) + math.Pow(2, 0)
		}
		for i := range want {
			want[i] -= float32(0.1*rs[i/sh.Cols]) * float32(cs[i%sh.Cols])
		}
		if _, err := (interp.Engine{P: p, Hypers: p.Func.DefaultHypers(), Shape: sh}).Run(theta, g, 0); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float32bits(theta[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%d × %d: theta[%d] = %v, want %v", sh.Rows, sh.Cols, i, theta[i], want[i])
			}
		}
	}
}
