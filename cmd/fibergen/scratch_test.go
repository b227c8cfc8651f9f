package main

import (
	"fmt"
	"path/filepath"
	"testing"
)

func TestScratch(t *testing.T) {
	d := fixtureFiles(t)
	p := func(s string) string { return filepath.Join(d, s) }
	base := []string{"run", p("dp_sgd.dsl"), "--noise", "off", "--out", p("out.npy")}
	cases := [][]string{
		{"--grads", p("nope.npy"), "--theta", p("theta.npy")},
		{"--grads", p("adir"), "--theta", p("theta.npy")},
		{"--grads", p("random.npy"), "--theta", p("theta.npy")},
		{"--grads", p("text.npy"), "--theta", p("theta.npy")},
		{"--grads", p("empty.npy"), "--theta", p("theta.npy")},
		{"--grads", p("f64.npy"), "--theta", p("theta.npy")},
		{"--grads", p("i32.npy"), "--theta", p("theta.npy")},
		{"--grads", p("rank1.npy"), "--theta", p("theta.npy")},
		{"--grads", p("rank3.npy"), "--theta", p("theta.npy")},
		{"--grads", p("scalar.npy"), "--theta", p("theta.npy")},
		{"--grads", p("grads.npy"), "--theta", p("theta2d.npy")},
		{"--grads", p("wide.npy"), "--theta", p("theta.npy")},
		{"--grads", p("fortran.npy"), "--theta", p("theta.npy")},
		{"--grads", p("trunc.npy"), "--theta", p("theta.npy")},
		{"--grads", p("header_only.npy"), "--theta", p("theta.npy")},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--sigma-w2", "-1"},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--sigma-w2", "nan"},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--sigma-w2", "inf"},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--sigma-w2", "abc"},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--noise", "maybe"},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--noise", "on", "--sigma-w2", "0.5"},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--seed", "-1"},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--seed", "abc"},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--out", p("nodir/out.npy")},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--out", p("adir")},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy"), "--set", "lr=-2"},
		{"--grads", p("grads.npy"), "--theta", p("theta.npy")},
	}
	for _, c := range cases {
		r := runMain(append(append([]string{}, base...), c...)...)
		fmt.Printf("%v\n  %d %q %q\n", c, r.code, r.stdout, r.stderr)
	}
	for _, c := range [][]string{{"build", p("noread.dsl"), "-o", p("o")}, {"build", p("adir"), "-o", p("o")}, {"build", p("empty.dsl"), "-o", p("o")}, {"build", p("dp_sgd.dsl"), p("dp_sgd_copy.dsl"), "-o", p("o")},
		{"build", p("dp_sgd.dsl"), "-o", p("adir/x\x00")}, {"build", p("dp_sgd.dsl"), "-o", p("dp_sgd.dsl")}, {"explain", p("broken.dsl")}, {"build", "-h"}, {"run", "--help"}, {"explain", "-o", "x"}} {
		r := runMain(c...)
		fmt.Printf("%v\n  %d %q %q\n", c, r.code, r.stdout, r.stderr)
	}
}
