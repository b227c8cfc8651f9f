package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime"
)

// TestOpenNoiseMode: the open option noise_mode ("" and "philox" the
// default, "secure"), a mode fg_open refuses, and fg_info's noise_mode and
// noise_scheme.
func TestOpenNoiseMode(t *testing.T) {
	for _, c := range []struct {
		json, mode, scheme string
	}{
		{`{}`, "philox", rng.Version},
		{`{"noise_mode": "philox"}`, "philox", rng.Version},
		{`{"noise_mode": "secure"}`, "secure", rng.SecureVersion},
	} {
		var opts openOptions
		if err := decodeJSON("open options", c.json, &opts); err != nil {
			t.Fatal(err)
		}
		ro, err := opts.options()
		if err != nil {
			t.Fatal(err)
		}
		ro.Backend = runtime.Go
		o, err := runtime.Open("../generated/dp_sgd", ro)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(infoOf(o))
		o.Close()
		if err != nil {
			t.Fatal(err)
		}
		var x struct{ NoiseMode, NoiseScheme string }
		if err := json.Unmarshal(b, &struct {
			NoiseMode   *string `json:"noise_mode"`
			NoiseScheme *string `json:"noise_scheme"`
		}{&x.NoiseMode, &x.NoiseScheme}); err != nil {
			t.Fatal(err)
		}
		if x.NoiseMode != c.mode || x.NoiseScheme != c.scheme {
			t.Errorf("%s: fg_info says noise_mode %q, noise_scheme %q; want %q, %q", c.json, x.NoiseMode, x.NoiseScheme, c.mode, c.scheme)
		}
	}
	for _, bad := range []string{"off", "Secure", "chacha"} {
		_, err := openOptions{NoiseMode: bad}.options()
		if err == nil || !strings.Contains(err.Error(), "want philox or secure") || !strings.HasPrefix(err.Error(), "fibergen: open options: ") {
			t.Errorf("noise_mode %q: %v; want a refusal naming the modes", bad, err)
		}
	}
}
