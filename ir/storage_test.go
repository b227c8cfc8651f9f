package ir

import (
	"strings"
	"testing"

	"github.com/fibergen/fibergen/lang"
)

func TestParseStorage(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Storage
		err  string
	}{
		{"bf16", Storage{DType: lang.BFloat16}, ""},
		{"f16 stochastic", Storage{DType: lang.Float16, Stochastic: true}, ""},
		{"  bf16   stochastic ", Storage{DType: lang.BFloat16, Stochastic: true}, ""},
		{"f32", Storage{DType: lang.Float32}, ""},
		{"", Storage{}, `want a type (f32, bf16 or f16), then "stochastic" or nothing`},
		{"bf16 nearest", Storage{}, `storage "bf16 nearest": want a type`},
		{"bf16 stochastic x", Storage{}, "want a type"},
		{"f64", Storage{}, `the parameters: unknown storage type "f64" (want f32, bf16 or f16)`},
		{"f32 stochastic", Storage{}, "the parameters: stochastic rounding of float32, which rounds nothing"},
	} {
		got, err := ParseStorage(tc.text)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseStorage(%q) = %v, %v; want an error with %q", tc.text, got, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("ParseStorage(%q) = %v, %v; want %v", tc.text, got, err, tc.want)
		case err == nil && got.String() != strings.Join(strings.Fields(tc.text), " "):
			t.Errorf("ParseStorage(%q).String() = %q: not the text it read", tc.text, got.String())
		}
	}
}

func TestSetParamStorage(t *testing.T) {
	f := &Func{States: []string{"m"}, Storage: map[string]Storage{"m": {DType: lang.BFloat16}}}
	if err := f.SetParamStorage(Storage{DType: lang.Float16, Stochastic: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(f.NarrowBuffers(), " "), "theta m"; got != want || !f.Stochastic() {
		t.Errorf("narrow buffers %q, stochastic %v; want %q, true", got, f.Stochastic(), want)
	}
	if err := f.SetParamStorage(Storage{DType: lang.Float32}); err != nil || f.StorageOf(ThetaName).Narrow() || f.Stochastic() {
		t.Errorf("float32 parameters: %v, theta %v, stochastic %v", err, f.StorageOf(ThetaName), f.Stochastic())
	}
	if err := f.SetParamStorage(Storage{DType: lang.Float32, Stochastic: true}); err == nil {
		t.Error("stochastic float32 parameters accepted")
	}
}

// FuzzParseStorage: ParseStorage (fibergen's --params, fg_resolve's params)
// never panics, and what it accepts prints as text it reads back the same.
func FuzzParseStorage(f *testing.F) {
	for _, s := range []string{"bf16", "f16 stochastic", "f32", "", "f32 stochastic", "bf16  stochastic", "\tbf16\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseStorage(text)
		if err != nil {
			return
		}
		if back, err := ParseStorage(s.String()); err != nil || back != s {
			t.Fatalf("ParseStorage(%q) = %v, which reads back as %v, %v", text, s, back, err)
		}
	})
}
