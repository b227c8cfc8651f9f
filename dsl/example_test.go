package dsl_test

import (
	"fmt"
	"os"

	"github.com/fibergen/fibergen/dsl"
)

const ema = `// An EMA of the privatized gradient.
optimizer ema
hyper lr = 0.1 in (0, inf)
hyper kappa = 0.6 in (0, 1]
state gt = 0
step {
	gt = (1 - kappa) * gt + kappa * g
	step_size = lr / (1 + t)   // per-step uniform
	theta = theta - step_size * gt
}
`

// ParseFile builds the syntax tree; Check resolves the names and classifies
// each step local as per-step uniform or per-coordinate.
func ExampleParseFile() {
	f, errs := dsl.ParseFile("ema.dsl", []byte(ema))
	if len(errs) > 0 {
		fmt.Println(errs)
		return
	}
	info, errs := dsl.Check(f)
	if len(errs) > 0 {
		fmt.Println(errs)
		return
	}
	fmt.Println("optimizer", f.Name())
	for _, h := range f.Hypers {
		fmt.Printf("hyper %s = %g in %s\n", h.Name.Name, h.Default.Value, h.Range)
	}
	for _, l := range info.Locals {
		fmt.Printf("local %s: per-coordinate %v\n", l.Name, l.Varying)
	}
	// Output:
	// optimizer ema
	// hyper lr = 0.1 in (0, inf)
	// hyper kappa = 0.6 in (0, 1]
	// local step_size: per-coordinate false
}

// Parse runs the parser and the checker in one call and returns their
// errors as one list, sorted, one per line.
func ExampleParse() {
	src := []byte(`optimizer leaky
observe two_point(a = g, lookahead = 1)
hyper c = 0.5 * g
state m = 0
step {
	m = m + g
	theta = theta - m
}
`)
	_, _, errs := dsl.Parse("leaky.dsl", src)
	for _, e := range errs {
		fmt.Println(e)
	}
	// Output:
	// leaky.dsl:2:23: privacy: observe argument a cannot read g; gradient information enters only through g, the privatized gradient, and only inside step
	// leaky.dsl:3:17: privacy: the default of hyper c cannot read g; gradient information enters only through g, the privatized gradient, and only inside step
}

// Print shows each error with its source line and a caret under the
// column, as fibergen check does.
func ExampleErrorList_Print() {
	src := []byte("optimizer typo\nhyper lr = 0.1\nstep {\n\ttheta = theta - lr * gg\n}\n")
	_, _, errs := dsl.Parse("typo.dsl", src)
	errs.Print(os.Stdout, src)
	// Output:
	// typo.dsl:4:23: undefined: gg (did you mean g?)
	// 		theta = theta - lr * gg
	// 		                     ^
}

// Format prints a file in canonical form: one declaration a line, comments
// and redundant parentheses dropped.
func ExampleFormat() {
	src := []byte("optimizer sgd; hyper lr = 1e-3 in (0, inf)  # learning rate\nstep { theta = (theta) - (lr * g) }\n")
	f, _, errs := dsl.Parse("sgd.dsl", src)
	if len(errs) > 0 {
		fmt.Println(errs)
		return
	}
	fmt.Print(string(dsl.Format(f)))
	// Output:
	// optimizer sgd
	// hyper lr = 1e-3 in (0, inf)
	// step {
	// 	theta = theta - lr * g
	// }
}

// ExprString prints an expression with the fewest parentheses that keep
// its meaning: ** binds tighter than unary minus and groups to the right.
func ExampleExprString() {
	f, _ := dsl.ParseFile("x.dsl", []byte("optimizer x\nstate s = ((-a) ** 2) - (b - (c ** d) ** e)\n"))
	fmt.Println(dsl.ExprString(f.States[0].Init))
	// Output:
	// (-a) ** 2 - (b - (c ** d) ** e)
}
