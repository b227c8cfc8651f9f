package corrnoise

// Error returns the variance, per coordinate and in units of σ_w², of the
// prefix sums Σ_{s≤t} w_s of the noise w = C⁻¹ z with Toeplitz
// coefficients noise (0 past its end), for t < n: the squared norms of the
// rows of B = A C⁻¹, A the all-ones lower triangle, whose row t has the
// prefix sums P_0 … P_t of noise. max is the largest over t (the last:
// the rows only grow), mean the mean over t. n < 1 gives 0, 0.
func Error(noise []float64, n int) (max, mean float64) {
	if n < 1 {
		return 0, 0
	}
	var p, row, total float64
	for t := range n {
		if t < len(noise) {
			p += noise[t]
		}
		row += p * p
		total += row
		max = row
	}
	return max, total / float64(n)
}

// Loss is the figures of a factorization over n steps with minimum
// separation b: its sensitivity and its error in units of σ_w².
type Loss struct {
	Sensitivity float64 `json:"sensitivity"`
	// Exact is false where Sensitivity is an upper bound.
	Exact     bool    `json:"sensitivity_exact"`
	MaxError  float64 `json:"max_error"`
	MeanError float64 `json:"mean_error"`
}

// Max is the largest variance of a prefix sum at unit sensitivity: what
// σ_w² costs once σ_w is scaled to the sensitivity (sens² × max error).
func (l Loss) Max() float64 { return l.Sensitivity * l.Sensitivity * l.MaxError }

// Mean is the mean variance of the prefix sums at unit sensitivity.
func (l Loss) Mean() float64 { return l.Sensitivity * l.Sensitivity * l.MeanError }

// Of returns Max or Mean.
func (l Loss) Of(o Objective) float64 {
	if o == Mean {
		return l.Mean()
	}
	return l.Max()
}

// Evaluate returns the figures of the strategy and noise filter pair over
// n steps with minimum separation b. The noise filter is what runs; the
// strategy must be its inverse (the caller's to keep so: Inverse).
func Evaluate(strategy, noise []float64, n, b int) (Loss, error) {
	s, exact, err := Sensitivity(strategy, n, b)
	if err != nil {
		return Loss{}, err
	}
	if err := checkFinite(padded(noise, n)); err != nil {
		return Loss{}, err
	}
	mx, mean := Error(noise, n)
	return Loss{Sensitivity: s, Exact: exact, MaxError: mx, MeanError: mean}, nil
}

// DPSGD returns the figures of independent noise (C = C⁻¹ = I) over n
// steps with minimum separation b: sensitivity √k, errors n and (n+1)/2.
func DPSGD(n, b int) (Loss, error) {
	return Evaluate([]float64{1}, []float64{1}, n, b)
}
