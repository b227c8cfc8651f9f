package dsl_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fibergen/fibergen/dsl"
)

// TestWarnings checks what Check warns about: unused hypers and states that
// only their own update reads, and nothing that some expression reads.
func TestWarnings(t *testing.T) {
	for _, c := range []struct {
		name, decls, step string
		want              []string
	}{
		{"none", "hyper lr = 0.1\nstate m = 0", "m = 0.9 * m + g\n theta = theta - lr * m", nil},
		{"unused hyper", "hyper lr = 0.1\nhyper wd = 0", "theta = theta - lr * g",
			[]string{"x.dsl:3:7: warning: hyper wd is never used"}},
		{"state read by itself only", "hyper lr = 0.1\nstate v = 0", "v = 0.9 * v + g * g\n theta = theta - lr * g",
			[]string{"x.dsl:3:7: warning: state v is updated but nothing else reads it"}},
		{"state written only", "hyper lr = 0.1\nstate v = 0", "v = g\n theta = theta - lr * g",
			[]string{"x.dsl:3:7: warning: state v is updated but nothing else reads it"}},
		{"state read through a local", "hyper lr = 0.1\nstate v = 0", "d = v * 2\n v = d + g\n theta = theta - lr * g", nil},
		{"hyper read by an initial value", "hyper lr = 0.1\nhyper v0 = 1\nstate v = v0", "v = v + g\n theta = theta - lr * v", nil},
		{"hyper read by a scalar's initial value and the host block", "hyper lr = 0.1\nhyper beta = 0.9\nhyper c0 = 0.5\nscalar c = c0",
			"host {\n c = beta * c + (1 - beta)\n }\n theta = theta - lr * g / c", nil},
		{"hyper read by another's default", "hyper lr = 0.1\nhyper lr_min = lr / 100", "theta = theta - lr_min * g", nil},
		{"hyper read by observe", "hyper lr = 0.1\nhyper k = 0.5\nobserve two_point(a = k, lookahead = 1)", "theta = theta - lr * g", nil},
		{"both", "hyper lr = 0.1\nhyper b = 2\nstate s = 0\nstate u = 0", "s = s + g\n u = s\n theta = theta - lr * g", []string{
			"x.dsl:3:7: warning: hyper b is never used",
			"x.dsl:5:7: warning: state u is updated but nothing else reads it"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := "optimizer x\n" + c.decls + "\nstep {\n " + c.step + "\n}\n"
			_, info, errs := dsl.Parse("x.dsl", []byte(src))
			if len(errs) > 0 {
				t.Fatalf("%v in\n%s", errs, src)
			}
			var got []string
			for i, w := range info.Warnings {
				if i < len(c.want) && strings.HasPrefix(w.Error(), c.want[i]) {
					got = append(got, c.want[i])
				} else {
					got = append(got, w.Error())
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestShippedHaveNoWarnings: every shipped optimizer checks clean.
func TestShippedHaveNoWarnings(t *testing.T) {
	files, _ := filepath.Glob("../optimizers/*.dsl")
	for _, path := range files {
		_, info, errs := dsl.Parse(path, readFile(t, path))
		if len(errs) > 0 || len(info.Warnings) > 0 {
			t.Errorf("%s: errors %v, warnings %v", path, errs, info.Warnings)
		}
	}
}
