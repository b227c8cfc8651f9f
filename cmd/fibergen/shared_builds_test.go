package main

import (
	"os"
	"sync"
	"testing"

	"github.com/fibergen/fibergen/pipeline"
)

// The tests build and open the same units many times — build's flag
// orders, its bad output paths, every backend at every size — and LLVM's
// outputs are a function of the unit alone, so each distinct unit is
// compiled once per test run and its outputs shared. What a build writes is
// still what LLVM made for it: TestBuildMatchesCheckedIn and the other
// build tests compare it byte for byte with generated/.
func init() {
	compileFiles = unitFilesOnce.get
	unitPTX = unitPTXOnce.get
}

// TestMain removes what the tests shared when they are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtBinary.dir != "" {
		os.RemoveAll(builtBinary.dir)
	}
	os.Exit(code)
}

var (
	unitFilesOnce = onceByUnit[[]pipeline.File]{compute: (*pipeline.Unit).Files}
	unitPTXOnce   = onceByUnit[[]byte]{compute: (*pipeline.Unit).PTX}
)

// onceByUnit computes a value of a unit once per distinct unit: its name,
// Go code, kernel module and manifest, which determine every file a build
// writes (LLVM is deterministic: generated/ is checked in).
type onceByUnit[T any] struct {
	compute func(*pipeline.Unit) (T, error)
	done    sync.Map // key → *onceResult[T]
}

type onceResult[T any] struct {
	once sync.Once
	val  T
	err  error
}

// get returns compute(u), computed once for all the units equal to u.
func (o *onceByUnit[T]) get(u *pipeline.Unit) (T, error) {
	key := u.Func.Name + "\x00" + string(u.GoCode) + "\x00" + u.Module.LL + "\x00" + string(u.Manifest)
	v, _ := o.done.LoadOrStore(key, new(onceResult[T]))
	r := v.(*onceResult[T])
	r.once.Do(func() { r.val, r.err = o.compute(u) })
	return r.val, r.err
}
