package ir

import (
	"strings"

	"github.com/fibergen/fibergen/dsl"
)

// Compile parses, checks, lowers and optimizes one .dsl source. A non-nil
// ErrorList holds the positioned diagnostics; err reports a failure after
// checking, which is a bug in fibergen rather than in the source.
func Compile(filename string, src []byte) (fn *Func, errs dsl.ErrorList, err error) {
	f, info, errs := dsl.Parse(filename, src)
	if len(errs) > 0 {
		return nil, errs, nil
	}
	fn, err = Lower(f, info)
	if err != nil {
		return nil, nil, err
	}
	return fn, nil, Optimize(fn)
}

func trimParens(s string) string {
	if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") && balanced(s[1:len(s)-1]) {
		return s[1 : len(s)-1]
	}
	return s
}

// balanced reports whether the parentheses of s never close below depth 0.
func balanced(s string) bool {
	depth := 0
	for _, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}
