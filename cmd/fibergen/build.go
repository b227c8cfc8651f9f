package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"syscall"

	"github.com/fibergen/fibergen/internal/fileout"
	"github.com/fibergen/fibergen/pipeline"
)

func cmdBuild(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	out := fs.String("o", "generated", "output directory")
	var params paramsFlag
	fs.Var(&params, "params", paramsUsage)
	files, ok := parseFlags(fs, args, stderr)
	switch {
	case !ok:
		return 2
	case len(files) == 0:
		return usageError(stderr, "build", "no .dsl files given")
	case *out == "":
		return usageError(stderr, "build", "-o needs a directory")
	}
	units, ok := compileAll(files, stderr, params.compiler(true))
	if !ok {
		return 1
	}
	outputs, err := buildOutputs(*out, units)
	if err != nil {
		return fail(stderr, "build", err)
	}
	if err := writeUnits(*out, outputs); err != nil {
		return fail(stderr, "build", err)
	}
	for i, spec := range files { // one unit each: compileAll succeeded
		fmt.Fprintf(stdout, "%s -> %s\n", spec, outputs[i].dir)
	}
	return 0
}

// unitFiles are the files build writes for one unit and the directory that
// holds them, <out>/<name>.
type unitFiles struct {
	dir   string
	files []pipeline.File
}

// compileFiles is (*pipeline.Unit).Files, the files of a unit with its
// kernels compiled by LLVM; a variable, so that the tests compile each
// distinct unit once however many builds they run.
var compileFiles = (*pipeline.Unit).Files

// buildOutputs compiles every unit's kernels, GOMAXPROCS units at a time,
// and checks every path before anything is written, so that a missing LLVM
// or an unwritable directory leaves no unit half written. An error is the
// first failing unit's, in the order of the command line.
func buildOutputs(out string, units []*pipeline.Unit) ([]unitFiles, error) {
	files, errs := make([][]pipeline.File, len(units)), make([]error, len(units))
	slots := make(chan struct{}, goruntime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, u := range units {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			files[i], errs[i] = compileFiles(u)
		})
	}
	wg.Wait()
	all := make([]unitFiles, len(units))
	for i, u := range units {
		if errs[i] != nil {
			return nil, fmt.Errorf("%s: %w", u.Path, errs[i])
		}
		all[i] = unitFiles{dir: filepath.Join(out, u.Func.Name), files: files[i]}
		for _, f := range files[i] {
			if err := checkOutPath(out, filepath.Join(all[i].dir, f.Name)); err != nil {
				return nil, err
			}
		}
	}
	return all, nil
}

// checkOutPath checks, before anything is written, that file can be created
// under out: file is not a directory or a symbolic link and its closest
// existing ancestor is a directory. It keeps one unwritable unit from
// leaving the others written.
func checkOutPath(out, file string) error {
	if fi, err := os.Lstat(file); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("-o %s: cannot write %s: it is a symbolic link: build replaces %s whole and writes through no link inside it (remove the link)", out, file, filepath.Dir(file))
	}
	if _, err := fileout.Target(file); err != nil {
		return fmt.Errorf("-o %s: cannot write %s: %w", out, file, err)
	}
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		st, err := os.Lstat(dir)
		switch {
		case err == nil && st.Mode()&os.ModeSymlink != 0:
			st, err = os.Stat(dir)
		case (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)) && dir != filepath.Dir(dir):
			continue
		}
		switch {
		case err != nil:
			return fmt.Errorf("-o %s: cannot use %s: %w", out, dir, fileout.RootCause(err))
		case !st.IsDir():
			return fmt.Errorf("-o %s: %s is not a directory", out, dir)
		}
		return nil
	}
}

// compileAll compiles every file; it fails if any file has an error or two
// files declare the same optimizer, before anything is written.
func compileAll(files []string, stderr io.Writer, compile func(string, io.Writer) *pipeline.Unit) ([]*pipeline.Unit, bool) {
	var units []*pipeline.Unit
	seen := map[string]string{}
	ok := true
	for _, path := range files {
		u := compile(path, stderr)
		switch {
		case u == nil:
			ok = false
		case seen[u.Func.Name] != "":
			fmt.Fprintf(stderr, "fibergen: %s and %s both declare optimizer %s\n", seen[u.Func.Name], path, u.Func.Name)
			ok = false
		default:
			seen[u.Func.Name] = path
			units = append(units, u)
		}
	}
	return units, ok
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
	units, ok := compileAll(files, stderr, checkFile) // no code generated
	for _, u := range units {                         // each file that checks, whatever the others do
		u.Warnings.Print(stderr, u.Src)
		fmt.Fprintf(stdout, "%s: ok\n", u.Path)
	}
	if !ok {
		return 1
	}
	return 0
}
