package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/fibergen/fibergen/dsl"
	"github.com/fibergen/fibergen/internal/fileout"
	"github.com/fibergen/fibergen/internal/objcache"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/manifest"
	"github.com/fibergen/fibergen/optimizers"
)

// This file finds an optimizer by what a user calls it — a shipped
// optimizer's name, a .dsl file, or a directory fibergen build wrote — and
// compiles a source once per user into the cache (package objcache), for
// the command line and the C library alike.

// ReadSource reads the DSL source spec names: the file spec if there is
// one, else the shipped optimizer of that name (package optimizers; a
// directory of that name does not hide it). path is what its diagnostics
// name.
func ReadSource(spec string) (path string, src []byte, err error) {
	if spec == "" {
		return "", nil, fmt.Errorf("no optimizer given: want a .dsl file or a shipped optimizer's name (%s)", shippedList())
	}
	src, err = os.ReadFile(spec)
	if err == nil {
		return spec, src, nil
	}
	if path, src, ok := optimizers.Source(spec); ok && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EISDIR)) {
		return path, src, nil
	}
	if errors.Is(err, syscall.EISDIR) {
		return "", nil, fmt.Errorf("%s is a directory: want a .dsl file or a shipped optimizer's name; a directory fibergen build wrote is for bench and the library", spec)
	}
	if !errors.Is(err, fs.ErrNotExist) || !shippedName.MatchString(spec) {
		return "", nil, fmt.Errorf("cannot read %s: %v", spec, fileout.RootCause(err))
	}
	return "", nil, fmt.Errorf("no file %s%s, and fibergen ships no optimizer of that name (%s)",
		spec, relativeTo(spec), shippedList())
}

// shippedList lists the shipped optimizers' names for a message.
func shippedList() string { return strings.Join(optimizers.Names(), ", ") }

// shippedName is what a shipped optimizer's name looks like (a DSL
// identifier); anything else is only ever a path.
var shippedName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// relativeTo says, for a relative path, which directory it was looked
// for in.
func relativeTo(path string) string {
	if wd, err := os.Getwd(); err == nil && !filepath.IsAbs(path) {
		return " (relative to " + wd + ")"
	}
	return ""
}

// Resolved is an optimizer ready to open (runtime.Open): its files, laid
// out as fibergen build lays them out.
type Resolved struct {
	Dir      string // absolute; its base is the optimizer's name
	Built    bool   // compiled by this Resolve, not found in the cache
	Warnings string // the source's warnings, printed as fibergen check prints them; "" if none
}

// Resolve finds the optimizer spec names: a directory fibergen build
// wrote, used as it is; else a .dsl file or a shipped optimizer's name
// (ReadSource), compiled into the cache on first use and found there
// after. A source with errors is a *CompileError.
func Resolve(spec string) (Resolved, error) { return ResolveFor(spec, ir.Storage{}) }

// ResolveFor is Resolve for parameters stored as params (CompileFor): a
// source is compiled for them, and a directory must have been built for
// them (fibergen build --params).
func ResolveFor(spec string, params ir.Storage) (Resolved, error) {
	fi, err := os.Stat(spec)
	switch {
	case err == nil && fi.IsDir() && !shadowed(spec):
		return builtDir(spec, params)
	case errors.Is(err, fs.ErrNotExist) && spec != "" && !shippedName.MatchString(spec):
		return Resolved{}, fmt.Errorf("no directory or file %s%s: give a directory fibergen build wrote, a .dsl file or a shipped optimizer's name (%s)",
			spec, relativeTo(spec), shippedList())
	}
	path, src, err := ReadSource(spec)
	if err != nil {
		return Resolved{}, err
	}
	u, list, err := CompileFor(path, src, params)
	switch {
	case len(list) > 0:
		return Resolved{}, &CompileError{List: list, Src: src}
	case err != nil:
		return Resolved{}, fmt.Errorf("%s: %w", path, err)
	}
	r, err := u.cachedDir()
	r.Warnings = printed(u.Warnings, src)
	return r, err
}

// shadowed reports whether the directory spec, which fibergen build did
// not write (no manifest), merely has a shipped optimizer's name: the name
// means the optimizer then (./fiber, a folder of the user's, does not hide
// the shipped fiber).
func shadowed(spec string) bool {
	if _, _, ok := optimizers.Source(spec); !ok {
		return false
	}
	_, err := os.Stat(filepath.Join(spec, filepath.Base(spec)+".json"))
	return err != nil
}

// builtDir checks that dir holds what fibergen build writes (its manifest,
// <name>.json), built for parameters stored as params, and returns it.
func builtDir(dir string, params ir.Storage) (Resolved, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Resolved{}, err
	}
	name := filepath.Base(abs)
	m, _, err := manifest.Read(filepath.Join(abs, name+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return Resolved{}, fmt.Errorf("%s has no %s.json: give a directory fibergen build wrote (generated/%s), a .dsl file or a shipped optimizer's name",
			dir, name, name)
	}
	if err != nil {
		return Resolved{}, err
	}
	fn, err := m.Func()
	if err != nil {
		return Resolved{}, err
	}
	return Resolved{Dir: abs}, checkParams(dir, fn, params)
}

// checkParams reports a build whose kernels store the parameters otherwise
// than params says (the zero Storage: float32).
func checkParams(dir string, fn *ir.Func, params ir.Storage) error {
	if built, params := fn.StorageOf(ir.ThetaName), params.Defaulted(); built != params {
		return fmt.Errorf("%s was built for parameters stored as %s, not %s: build it with fibergen build --params '%s', "+
			"or give its .dsl file or shipped name, which are compiled for the parameters given", dir, built, params, params)
	}
	return nil
}

// cachedDir is the directory of u's files in the cache, named by a hash
// of what they are made from (cacheKey), written on first use.
func (u *Unit) cachedDir() (Resolved, error) {
	key, err := u.cacheKey()
	if err != nil {
		return Resolved{}, err
	}
	name := u.Func.Name
	dir, built, err := objcache.Entry("opt", key, func(dir string) error {
		files, err := u.Files()
		if err != nil {
			return err
		}
		return writeFiles(filepath.Join(dir, name), files)
	})
	return Resolved{Dir: filepath.Join(dir, name), Built: built}, err
}

// cacheKey names u's entry in the cache by what its files (Files) are made
// from, without making them: the name, the manifest and each output's
// Inputs.
func (u *Unit) cacheKey() (string, error) {
	parts := []string{"opt", u.Func.Name, string(u.Manifest)}
	for _, o := range u.Outputs {
		in, err := o.Inputs()
		if err != nil {
			return "", err
		}
		parts = append(parts, in...)
	}
	return objcache.Key(parts...), nil
}

// writeFiles writes files into the new directory dir.
func writeFiles(dir string, files []File) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CompileError is a source's diagnostics, printed as fibergen check prints
// them: each at file:line:col, with its line and a caret.
type CompileError struct {
	List dsl.ErrorList
	Src  []byte
}

func (e *CompileError) Error() string { return printed(e.List, e.Src) }

// printed is l as ErrorList.Print writes it, without the last newline.
func printed(l dsl.ErrorList, src []byte) string {
	var b strings.Builder
	l.Print(&b, src)
	return strings.TrimSuffix(b.String(), "\n")
}
