package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagErrors: every command refuses a bad flag — unknown, without its
// value, with a value it cannot take, given twice, malformed — in one line
// on stderr that names the flag as the usage spells it (--seed, -o), with
// exit status 2, nothing on stdout and no output file written.
func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	fiber := optPath("fiber")
	run := "run " + fiber + " --grads g.npy --theta t.npy --out " + out + " --noise off"
	privacy := "privacy epsilon --sample-rate 0.01 --steps 100 --delta 1e-5"
	for _, c := range []struct {
		name, args, msg string
	}{
		{"build unknown", "build " + fiber + " -o " + out + " --zzz", "fibergen build: unknown flag --zzz (fibergen help lists the flags of every command)"},
		{"build unknown one letter", "build " + fiber + " -x", "fibergen build: unknown flag --x (fibergen help lists the flags of every command)"},
		{"build missing value", "build " + fiber + " -o", "fibergen build: -o needs a value"},
		{"build twice", "build " + fiber + " -o " + out + " --o " + out, "fibergen build: -o given twice"},
		{"check unknown", "check " + fiber + " --set lr=1", "fibergen check: unknown flag --set (fibergen help lists the flags of every command)"},
		{"check unknown single dash", "check " + fiber + " -set lr=1", "fibergen check: unknown flag --set (fibergen help lists the flags of every command)"},
		{"explain unknown", "explain " + fiber + " --seed 1", "fibergen explain: unknown flag --seed (fibergen help lists the flags of every command)"},
		{"explain missing value", "explain " + fiber + " --set", "fibergen explain: --set needs a value"},
		{"explain bad bool", "explain " + fiber + " --json=maybe", `fibergen explain: --json "maybe": want true or false`},
		{"explain set twice", "explain " + fiber + " --set omega=0.5 --set omega=0.6", `fibergen explain: --set "omega=0.6": omega is set twice (omega=0.5, then omega=0.6)`},
		{"run unknown", run + " --lr 0.1", "fibergen run: unknown flag --lr (fibergen help lists the flags of every command)"},
		{"run missing value", run + " --seed", "fibergen run: --seed needs a value"},
		{"run bad value", run + " --seed abc", `fibergen run: --seed "abc": want an integer from 0 to 2^64-1`},
		{"run bad value single dash", run + " -seed=abc", `fibergen run: --seed "abc": want an integer from 0 to 2^64-1`},
		{"run bad float", run + " --sigma-w2 x", `fibergen run: --sigma-w2 "x": want a number`},
		{"run bad group", run + " --group 2:1:lr=1", `fibergen run: --group "2:1:lr=1": want LO:HI:name=value[,name=value...] with 0 <= LO < HI`},
		{"run twice", run + " --out " + out, "fibergen run: --out given twice"},
		{"run bad syntax", run + " ---seed 1", `fibergen run: bad flag syntax "---seed": want --name or --name=value`},
		{"bench unknown", "bench " + fiber + " --size 3", "fibergen bench: unknown flag --size (fibergen help lists the flags of every command)"},
		{"bench missing value", "bench " + fiber + " --steps", "fibergen bench: --steps needs a value"},
		{"bench bad value", "bench " + fiber + " --n lots", `fibergen bench: --n "lots": want an integer from 1 to 2^31`},
		{"privacy unknown", privacy + " --sigm 1", "fibergen privacy: unknown flag --sigm (fibergen help lists the flags of every command)"},
		{"privacy missing value", privacy + " --sigma", "fibergen privacy: --sigma needs a value"},
		{"privacy bad value", privacy + " --sigma x", `fibergen privacy: --sigma "x": want a number`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runMain(strings.Fields(c.args)...)
			if r.code != 2 || r.stdout != "" || r.stderr != c.msg+"\n" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, no stdout and\n%s", r.code, r.stdout, r.stderr, c.msg)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}

// TestFlagForms: a flag may be spelled --name value, --name=value, -name
// value; a bool flag alone or as --name=false; "--" ends the flags.
func TestFlagForms(t *testing.T) {
	fiber := optPath("fiber")
	want := runMain("explain", fiber, "--set", "lr=0.01")
	if want.code != 0 {
		t.Fatalf("explain --set lr=0.01: exit %d: %s", want.code, want.stderr)
	}
	for _, args := range [][]string{
		{"explain", fiber, "--set=lr=0.01"},
		{"explain", "-set", "lr=0.01", fiber},
		{"explain", "--set", "lr=0.01", "--json=false", fiber},
		{"explain", "--set", "lr=0.01", "--", fiber},
	} {
		if r := runMain(args...); r != want {
			t.Errorf("%q: exit %d, stderr %q; want what --set lr=0.01 gives", args, r.code, r.stderr)
		}
	}
	if r := runMain("explain", "--", "--json"); r.code != 1 || !strings.Contains(r.stderr, "cannot read --json") {
		t.Errorf(`explain -- --json: exit %d, stderr %q; want "--json" read as a file`, r.code, r.stderr)
	}
}

// TestSetsFlagTwice: a name set twice is refused however it is spaced,
// as lang.ParseSetting reads it, and a malformed setting at once.
func TestSetsFlagTwice(t *testing.T) {
	var l setsFlag
	if err := l.Set("lr=1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Set(" lr = 2"); err == nil || !strings.Contains(err.Error(), "lr is set twice") {
		t.Errorf("lr=1, then \" lr = 2\": %v, want a refusal", err)
	}
	if err := l.Set("lr=x"); err == nil || !strings.Contains(err.Error(), "x is not a number") {
		t.Errorf("lr=x: %v, want a refusal", err)
	}
}
