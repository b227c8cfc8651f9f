package main

import (
	"fmt"

	"github.com/fibergen/fibergen/internal/cudasim"
	"github.com/fibergen/fibergen/pipeline"
	"github.com/fibergen/fibergen/runtime"
)

// openUnit opens u through the runtime, as a trainer opens what fibergen
// build wrote: on the cpu backend with the host kernel built into the
// user's cache, on cuda with u's PTX, on ptxsim with u's PTX on a new
// simulated device (the command wires the simulator into the runtime,
// which does not link it), on go with the reference.
func openUnit(u *pipeline.Unit, opts runtime.Options) (*runtime.Optimizer, error) {
	c := runtime.Compiled{Manifest: u.Manifest}
	var err error
	switch {
	case u.NoKernels(): // the runtime refuses every backend but go, and says why
	case opts.Backend == runtime.CPU:
		c.SharedObject, err = u.CachedSharedObject()
	case opts.Backend == runtime.PTXSim:
		if _, opts.Driver, err = cudasim.New(cudasim.Config{}); err == nil {
			c.PTX, err = unitPTX(u)
		}
	case opts.Backend == runtime.CUDA:
		c.PTX, err = unitPTX(u)
	}
	if err != nil {
		return nil, fmt.Errorf("--backend %s: %w", opts.Backend, err)
	}
	return runtime.OpenCompiled(c, opts)
}

// unitPTX is (*pipeline.Unit).PTX, which runs llc; a variable, so that the
// tests compile each distinct unit's PTX once however often they open it.
var unitPTX = (*pipeline.Unit).PTX
