package lang

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ParseSetting splits a "name=value" override of a hyper, as a command
// line, a trainer or a parameter group gives it: the name and the value
// may be surrounded by spaces, and the value is a Go float64 literal. It
// checks the form only; whether the name is a hyper and the value in its
// range is for the optimizer (ir.Func.SetHyper).
func ParseSetting(s string) (name string, value float64, err error) {
	name, text, ok := strings.Cut(s, "=")
	name, text = strings.TrimSpace(name), strings.TrimSpace(text)
	if !ok || name == "" || text == "" {
		return "", 0, fmt.Errorf("malformed setting %q: want name=value", s)
	}
	value, err = strconv.ParseFloat(text, 64)
	if errors.Is(err, strconv.ErrRange) {
		return "", 0, fmt.Errorf("setting %q: %s is out of the float64 range", s, text)
	}
	if err != nil {
		return "", 0, fmt.Errorf("malformed setting %q: %s is not a number", s, text)
	}
	return name, value, nil
}
