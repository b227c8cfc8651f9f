package corrnoise_test

import (
	"fmt"

	"github.com/fibergen/fibergen/corrnoise"
)

func ExampleInverse() {
	r, _ := corrnoise.Inverse([]float64{1, -0.5, 0, 0})
	fmt.Println(r)
	// Output: [1 0.5 0.25 0.125]
}

func ExampleSensitivity() {
	strategy := []float64{1, 0.5, 0.25, 0.125}
	sens, exact, _ := corrnoise.Sensitivity(strategy, 4, 2) // steps 0 and 2 at most
	fmt.Printf("%.4f %v\n", sens, exact)
	// Output: 1.7897 true
}

func ExampleError() {
	mx, mean := corrnoise.Error([]float64{1}, 4) // independent noise
	fmt.Println(mx, mean)
	// Output: 4 2.5
}

func ExampleBLT_Inverse() {
	strategy := corrnoise.BLT{Decay: []float64{0.8}, Weight: []float64{0.5}}
	noise, _ := strategy.Inverse()
	fmt.Printf("decay %.2f weight %.2f\n", noise.Decay[0], noise.Weight[0])
	// Output: decay 0.30 weight -0.50
}

func ExampleDesign() {
	m, _ := corrnoise.Design(1000, 100, 2, corrnoise.Max)
	fmt.Printf("%d buffers, ratio to DP-SGD %.3f, exact %v\n", m.Buffers, m.Ratio(), m.Loss.Exact)
	// Output: 2 buffers, ratio to DP-SGD 0.022, exact true
}
