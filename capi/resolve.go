package main

/*
#include <stdint.h>
*/
import "C"

import (
	"github.com/fibergen/fibergen/internal/objcache"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/pipeline"
)

// resolveRequest is fg_resolve's request: the optimizer, the storage of
// the parameters its kernels are for (ir.ParseStorage: "bf16 stochastic";
// "" is float32), and the variables that place the cache as the caller
// sees its environment now (this library's Go runtime copied it once, when
// it was loaded).
type resolveRequest struct {
	Spec         string `json:"spec"`
	Params       string `json:"params"`
	Cache        string `json:"FIBERGEN_CACHE"`
	XDGCacheHome string `json:"XDG_CACHE_HOME"`
	Home         string `json:"HOME"`
}

// resolved is fg_resolve's answer.
type resolved struct {
	Dir      string `json:"dir"`      // what fg_open opens
	Built    bool   `json:"built"`    // compiled by this call, not found in the cache
	Warnings string `json:"warnings"` // the source's warnings, with their carets; "" if none
}

// fg_resolve finds the optimizer a request's spec names — a shipped
// optimizer's name ("dp_adamw"), a .dsl file, or a directory fibergen
// build wrote — for the parameters' storage it names, and stores in *out,
// as JSON, the directory to give fg_open. A source is compiled with LLVM into the per-user cache on its
// first use ($FIBERGEN_CACHE, else $XDG_CACHE_HOME/fibergen, else
// ~/.cache/fibergen, as the request gives them) and found there after,
// safely when processes race; its errors, with their carets, are the
// message.
//
//export fg_resolve
func fg_resolve(request *C.char, out **C.char, err *C.char, errlen C.size_t) C.int {
	return status(jsonAnswer("resolve", out, func() (any, error) {
		var q resolveRequest
		e := decodeJSON("resolve", C.GoString(request), &q)
		if e != nil {
			return nil, e
		}
		env := map[string]string{objcache.EnvDir: q.Cache, "XDG_CACHE_HOME": q.XDGCacheHome, "HOME": q.Home}
		objcache.SetGetenv(func(k string) string { return env[k] })
		params := ir.Storage{}
		if q.Params != "" {
			if params, e = ir.ParseStorage(q.Params); e != nil {
				return nil, e
			}
		}
		r, e := pipeline.ResolveFor(q.Spec, params)
		return resolved{Dir: r.Dir, Built: r.Built, Warnings: r.Warnings}, e
	}), err, errlen)
}
