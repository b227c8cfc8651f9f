package lang

import (
	"math"
	"strings"
	"testing"
)

func TestParseSetting(t *testing.T) {
	good := []struct {
		in    string
		name  string
		value float64
	}{
		{"lr=0.1", "lr", 0.1},
		{" lr = 1e-3 ", "lr", 1e-3},
		{"beta1=-2", "beta1", -2},
		{"eps=0x1p-3", "eps", 0.125},
		{"wd=inf", "wd", math.Inf(1)}, // a number; SetHyper rejects it
	}
	for _, tt := range good {
		name, value, err := ParseSetting(tt.in)
		if err != nil || name != tt.name || value != tt.value {
			t.Errorf("ParseSetting(%q) = %q, %v, %v; want %q, %v", tt.in, name, value, err, tt.name, tt.value)
		}
	}
	bad := []struct{ in, want string }{
		{"lr", "want name=value"},
		{"", "want name=value"},
		{"=1", "want name=value"},
		{" = 1", "want name=value"},
		{"lr=", "want name=value"},
		{"lr = ", "want name=value"},
		{"lr=abc", "abc is not a number"},
		{"lr=1=2", "1=2 is not a number"},
		{"lr=1 2", "1 2 is not a number"},
		{"lr=1,5", "1,5 is not a number"},
	}
	if _, _, err := ParseSetting("lr=1e999"); err == nil || !strings.Contains(err.Error(), "1e999 is out of the float64 range") {
		t.Errorf("ParseSetting(lr=1e999): %v, want an out-of-range error", err)
	}
	for _, tt := range bad {
		name, value, err := ParseSetting(tt.in)
		if err == nil {
			t.Errorf("ParseSetting(%q) = %q, %v, want an error", tt.in, name, value)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "malformed setting") || !strings.Contains(msg, tt.want) {
			t.Errorf("ParseSetting(%q): %v, want it to mention %q", tt.in, err, tt.want)
		}
	}
}
