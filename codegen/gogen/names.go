package gogen

import (
	"fmt"
	"go/token"
	"regexp"
	"strings"
)

// exportedName turns a DSL name into an exported Go identifier:
// eps_v → EpsV, beta1 → Beta1. A name that would be one of the generated
// methods (Hypers.Set, Hypers.Validate, Optimizer.Update) gets a trailing
// underscore, as a field cannot share its type's method's name.
func exportedName(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	if b.Len() == 0 {
		return "X"
	}
	if methodNames[b.String()] {
		b.WriteString("_")
	}
	return b.String()
}

// methodNames are the methods of the generated Hypers and Optimizer types.
var methodNames = map[string]bool{"Set": true, "Validate": true, "Update": true}

// reserved are identifiers the generated code uses itself.
var reserved = map[string]bool{
	"h": true, "s": true, "t": true, "i": true, "n": true, "o": true, "sigmaW2": true,
	"math": true, "fmt": true, "theta": true, "g": true, "err": true,
	"float32": true, "float64": true, "len": true, "panic": true, "int": true,
	"error": true, "string": true, "nil": true, "true": true, "false": true,
	"maxOf": true, "minOf": true, "abs32": true, "signOf": true, "hyperField": true,
	"nz": true, "cache": true, "noiseCache": true,
}

var tempName = regexp.MustCompile(`^[uv][0-9]+$`)

// localName turns a DSL state name into a Go parameter name that cannot
// clash with a keyword or with the generated code's own identifiers.
func localName(s string) string {
	if token.IsKeyword(s) || reserved[s] || tempName.MatchString(s) {
		return s + "_"
	}
	return s
}

// checkUnique reports two DSL names that map to the same Go name.
func checkUnique(names []string, goName func(string) string) error {
	seen := map[string]string{}
	for _, n := range names {
		g := goName(n)
		if prev, ok := seen[g]; ok {
			return fmt.Errorf("names %s and %s both become %s in Go; rename one", prev, n, g)
		}
		seen[g] = n
	}
	return nil
}
