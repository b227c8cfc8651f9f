package reduce_test

import (
	"fmt"

	"github.com/fibergen/fibergen/reduce"
)

// Privatize clips three examples of two coordinates to norm 1 and divides
// their sum by the batch size 3: (3, 4) has norm 5 and becomes (0.6, 0.8),
// (0.3, 0.4) is kept, and (0, 0) is kept. Under Poisson sampling the rows
// are the examples drawn and the divisor the expected batch size.
func ExamplePrivatize() {
	cur := []float32{3, 4, 0.3, 0.4, 0, 0}
	out := make([]float32, 2)
	bad := reduce.Privatize(out, cur, nil, 3, 3, 0, 1)
	fmt.Printf("%.4f %d\n", out, bad)
	// Output: [0.3000 0.4000] -1
}
