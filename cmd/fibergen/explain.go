package main

import (
	"encoding/json"
	"flag"
	"io"

	"github.com/fibergen/fibergen/explain"
)

func cmdExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	showIR := fs.Bool("ir", false, "include the IR dump")
	asJSON := fs.Bool("json", false, "print JSON")
	var sets listFlag
	fs.Var(&sets, "set", "override a hyper: name=value (repeatable)")
	files, ok := parseFlags(fs, args, stderr)
	switch {
	case !ok:
		return 2
	case len(files) != 1:
		return usageError(stderr, "explain", "want exactly one .dsl file, got %d", len(files))
	}
	u := compileFile(files[0], stderr)
	if u == nil {
		return 1
	}
	x, err := explain.Describe(u, sets)
	if err != nil {
		return fail(stderr, "explain", err)
	}
	if *showIR {
		x.IR = u.Func.String()
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(x); err != nil {
			return fail(stderr, "explain", err)
		}
		return 0
	}
	x.WriteText(stdout)
	return 0
}
