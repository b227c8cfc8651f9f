package oracle

import "math"

// FactoredAdam is Adam with Adafactor's factored second moment (Shazeer &
// Stern 2018, "Adafactor: Adaptive Learning Rates with Sublinear Memory
// Cost"): the paper's Adam (its Algorithm 2, β1 > 0, both moments
// bias-corrected, a constant β2) with Algorithm 4's factored estimate, on
// one tensor of Rows × Cols — R and C the running means of G² + ε1 along
// each row and each column, V̂ = R Cᵀ / mean(R), the paper's R Cᵀ / 1ᵀR
// with sums written with means — and an absolute step with decoupled
// weight decay, θ −= η (m̂ / √V̂ + λ θ): not Algorithm 4's increasing β̂2t,
// relative step or update clipping. H.Eps is the paper's ε1, under the
// square.
type FactoredAdam struct {
	H          AdamW
	Rows, Cols int
	T          int // t, the index of the next step (from 0)
	M, R, C    []float64
}

// NewFactoredAdam returns it over a tensor of rows × cols, m = R = C = 0.
func NewFactoredAdam(h AdamW, rows, cols int) *FactoredAdam {
	return &FactoredAdam{H: h, Rows: rows, Cols: cols, M: make([]float64, rows*cols), R: make([]float64, rows), C: make([]float64, cols)}
}

// Step advances the tensor theta (row-major) on its privatized gradient g.
func (o *FactoredAdam) Step(theta, g []float64) {
	h := o.H
	o.T++
	rowSum, colSum := make([]float64, o.Rows), make([]float64, o.Cols)
	for i := range o.Rows {
		for j := range o.Cols {
			x := g[i*o.Cols+j]*g[i*o.Cols+j] + h.Eps
			rowSum[i], colSum[j] = rowSum[i]+x, colSum[j]+x
		}
	}
	meanR := 0.0
	for i := range o.R {
		o.R[i] = h.Beta2*o.R[i] + (1-h.Beta2)*rowSum[i]/float64(o.Cols)
		meanR += o.R[i] / float64(o.Rows)
	}
	for j := range o.C {
		o.C[j] = h.Beta2*o.C[j] + (1-h.Beta2)*colSum[j]/float64(o.Rows)
	}
	c1, c2 := 1-math.Pow(h.Beta1, float64(o.T)), 1-math.Pow(h.Beta2, float64(o.T))
	for k := range theta {
		o.M[k] = h.Beta1*o.M[k] + (1-h.Beta1)*g[k]
		v := o.R[k/o.Cols] * o.C[k%o.Cols] / meanR / c2
		theta[k] -= h.Lr * (o.M[k]/c1/math.Sqrt(v) + h.Wd*theta[k])
	}
}
