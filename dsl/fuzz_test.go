package dsl_test

import (
	"bytes"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fibergen/fibergen/dsl"
)

// FuzzCheck feeds arbitrary source to the front end: it must never panic,
// every error must point into the file and print, and a valid file's
// canonical form must be valid and canonical. Seeds: every file under
// testdata (crashers the fuzzer found stay in testdata/fuzz/FuzzCheck) and
// the shipped optimizers.
//
//	go test ./dsl -run '^$' -fuzz FuzzCheck -fuzztime 60s
func FuzzCheck(f *testing.F) {
	seeds, _ := filepath.Glob("../optimizers/*.dsl")
	filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.Contains(path, "fuzz") {
			seeds = append(seeds, path)
		}
		return nil
	})
	for _, path := range seeds {
		f.Add(readFile(f, path))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, _, errs := dsl.Parse("fuzz.dsl", src)
		for _, e := range errs {
			checkPos(t, src, e)
			if e.Msg == "" || strings.Contains(e.Msg, "\n") {
				t.Errorf("bad message %q at %v", e.Msg, e.Pos)
			}
		}
		if len(errs) > dsl.MaxErrors+1 {
			t.Errorf("%d errors, more than the cap", len(errs))
		}
		errs.Print(io.Discard, src)
		if len(errs) > 0 {
			return
		}
		once := dsl.Format(file)
		again, _, errs := dsl.Parse("formatted.dsl", once)
		if len(errs) > 0 {
			t.Fatalf("Format output does not check: %v\n%s", errs, once)
		}
		if twice := dsl.Format(again); !bytes.Equal(once, twice) {
			t.Fatalf("Format is not a fixed point:\nonce:\n%s\ntwice:\n%s", once, twice)
		}
	})
}
