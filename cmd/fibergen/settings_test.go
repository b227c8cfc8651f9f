package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestExplainRunAgree: explain --set gives the warnings and errors that run
// gives for the same settings and opt-ins (checkSettings), with the same
// exit status: settings that are fine, that warn (an extrapolating
// observation allowed) and that are refused.
func TestExplainRunAgree(t *testing.T) {
	dir := fixtureFiles(t)
	for _, c := range []struct {
		name, dsl, flags string
		code             int
		stderr           string // what both print after "fibergen CMD: "; "" for nothing
	}{
		{"defaults", "fiber", "", 0, ""},
		{"fine", "fiber", "--set kappa=0.5 --set gamma=1", 0, ""},
		{"extrapolation refused", "fiber", "--set kappa=0.3", 1, "observe two_point: a = (1 - kappa) / (kappa * gamma) = 3.33333 at kappa=0.3, gamma=0.7, step 0, is outside [0, 1]: "},
		{"extrapolation allowed", "fiber", "--set kappa=0.3 --allow-extrapolation", 0, "warning: observe two_point: a = (1 - kappa) / (kappa * gamma) = 3.33333 at kappa=0.3, gamma=0.7, step 0, is outside [0, 1]: "},
		{"observation not finite", "fiber", "--set gamma=1e-320 --allow-extrapolation", 1, "observe two_point: a = (1 - kappa) / (kappa * gamma) is +Inf at kappa=0.6, gamma=1e-320, step 0: the observation's arguments must be finite"},
		{"out of range", "fiber", "--set kappa=2", 1, "hyper kappa = 2 is outside its range (0, 1]"},
		{"unknown hyper", "fiber", "--set momentum=0.9", 1, "fiber has no hyper momentum"},
		{"host value not finite", "fiber", "--set lr=1e308 --set wd=1e308", 1, "the host value S10 = 1 - lr * wd is -Inf at "},
		{"unstable", "rho", "--set rho=1.2", 1, "the filter of state c is unstable at rho=1.2"},
		{"unstable allowed", "rho", "--set rho=1.2 --allow-unstable", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsl := filepath.Join(dir, c.dsl+".dsl")
			flags := strings.Fields(c.flags)
			explain := runMain(append([]string{"explain", dsl}, flags...)...)
			run := runMain(append([]string{"run", dsl, "--grads", filepath.Join(dir, "grads.npy"), "--theta", filepath.Join(dir, "theta.npy"),
				"--out", filepath.Join(t.TempDir(), "out.npy"), "--noise", "off"}, flags...)...)
			got := map[string]result{"explain": explain, "run": run}
			for cmd, r := range got {
				msg, _ := strings.CutPrefix(r.stderr, "fibergen "+cmd+": ")
				switch {
				case r.code != c.code:
					t.Errorf("%s: exit %d, want %d; stderr %q", cmd, r.code, c.code, r.stderr)
				case c.stderr == "" && r.stderr != "":
					t.Errorf("%s: stderr %q, want nothing", cmd, r.stderr)
				case c.stderr != "" && (!strings.HasPrefix(msg, c.stderr) || strings.Count(r.stderr, "\n") != 1):
					t.Errorf("%s: stderr %q, want one line starting fibergen %s: %s", cmd, r.stderr, cmd, c.stderr)
				}
			}
			ex, _ := strings.CutPrefix(explain.stderr, "fibergen explain: ")
			ru, _ := strings.CutPrefix(run.stderr, "fibergen run: ")
			if ex != ru {
				t.Errorf("explain says\n%s\nrun says\n%s", ex, ru)
			}
		})
	}
}
