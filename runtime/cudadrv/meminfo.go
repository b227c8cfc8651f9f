package cudadrv

import (
	"errors"
	"fmt"
	"sync"
)

// memGetInfo is cuMemGetInfo_v2(size_t *free, size_t *total), bound on
// first use rather than by Load, so that a driver without it still loads.
var memGetInfo struct {
	once sync.Once
	fn   func(free, total *uintptr) uint32
	err  error
}

// bindMemGetInfo binds memGetInfo.fn in d's library, once per process
// (Load returns one Driver per process).
func bindMemGetInfo(d *Driver) error {
	memGetInfo.once.Do(func() {
		addr, err := lookupSymbol(d.lib, "cuMemGetInfo_v2")
		if err == nil && addr == 0 {
			err = errors.New("symbol resolves to NULL")
		}
		if err != nil {
			memGetInfo.err = fmt.Errorf("cuda: %s lacks cuMemGetInfo_v2: %w", d.libName, err)
			return
		}
		if err := bindFunc(&memGetInfo.fn, addr); err != nil {
			memGetInfo.err = fmt.Errorf("cuda: cannot bind cuMemGetInfo_v2: %w", err)
		}
	})
	return memGetInfo.err
}

// memGetInfo returns d's cuMemGetInfo_v2.
func (d *Driver) memGetInfo() (func(free, total *uintptr) uint32, error) {
	if d.goLookup != nil {
		fn, ok := d.goLookup("cuMemGetInfo_v2").(func(free, total *uintptr) uint32)
		if !ok {
			return nil, fmt.Errorf("cuda: %s lacks cuMemGetInfo_v2", d.libName)
		}
		return fn, nil
	}
	return memGetInfo.fn, bindMemGetInfo(d)
}

// MemInfo returns the free and the total memory of c's device in bytes
// (cuMemGetInfo_v2), as the driver sees it: other contexts and processes
// on the device count too.
func (c *Context) MemInfo() (free, total int64, err error) {
	fn, err := c.d.memGetInfo()
	if err != nil {
		return 0, 0, err
	}
	leave, err := c.enter()
	if err != nil {
		return 0, 0, err
	}
	defer leave()
	var f, t uintptr
	if err := c.d.check("cuMemGetInfo_v2", fn(&f, &t)); err != nil {
		return 0, 0, err
	}
	return int64(f), int64(t), nil
}
