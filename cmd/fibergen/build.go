package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func cmdBuild(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	out := fs.String("o", "generated", "output directory")
	files, ok := parseFlags(fs, args, stderr)
	switch {
	case !ok:
		return 2
	case len(files) == 0:
		return usageError(stderr, "build", "no .dsl files given")
	}
	units, ok := compileAll(files, stderr)
	if !ok {
		return 1
	}
	for _, u := range units {
		dir := filepath.Join(*out, u.fn.Name)
		if err := writeFileAtomic(filepath.Join(dir, u.fn.Name+".go"), u.goSrc); err != nil {
			return fail(stderr, "build", err)
		}
		fmt.Fprintf(stdout, "%s -> %s\n", u.path, dir)
	}
	return 0
}

// compileAll compiles every file; it fails if any file has an error or two
// files declare the same optimizer, before anything is written.
func compileAll(files []string, stderr io.Writer) ([]*unit, bool) {
	var units []*unit
	seen := map[string]string{}
	ok := true
	for _, path := range files {
		u := compileFile(path, stderr)
		switch {
		case u == nil:
			ok = false
		case seen[u.fn.Name] != "":
			fmt.Fprintf(stderr, "fibergen: %s and %s both declare optimizer %s\n", seen[u.fn.Name], path, u.fn.Name)
			ok = false
		default:
			seen[u.fn.Name] = path
			units = append(units, u)
		}
	}
	return units, ok
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, so that path holds either its old content or the new, never a
// partial file.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename this is a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func cmdCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	files, ok := parseFlags(fs, args, stderr)
	switch {
	case !ok:
		return 2
	case len(files) == 0:
		return usageError(stderr, "check", "no .dsl files given")
	}
	if _, ok := compileAll(files, stderr); !ok {
		return 1
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "%s: ok\n", f)
	}
	return 0
}
