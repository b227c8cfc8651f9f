package cudasim

import (
	"slices"
	"time"
	"unsafe"

	"github.com/fibergen/fibergen/internal/ptxsim"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// The memory, module, kernel and event entry points.

func (s *Sim) cuMemAlloc(dptr *uint64, bytes uintptr) uint32 {
	return s.call(func() uint32 {
		if bytes > totalMem-uintptr(s.mem.Allocated()) {
			return cudadrv.CodeOutOfMemory
		}
		a, err := s.mem.Alloc(int(bytes))
		if err != nil {
			return cudadrv.CodeOutOfMemory
		}
		*dptr = a
		return 0
	})
}

func (s *Sim) cuMemFree(dptr uint64) uint32 {
	return s.call(func() uint32 { return code(s.mem.Free(dptr)) })
}

// code is CUDA_ERROR_INVALID_VALUE for a failed memory operation.
func code(err error) uint32 {
	if err != nil {
		return cudadrv.CodeInvalidValue
	}
	return 0
}

func hostBytes(p unsafe.Pointer, n uintptr) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), n)
}

func (s *Sim) cuMemcpyHtoD(dst uint64, src unsafe.Pointer, n uintptr) uint32 {
	return s.call(func() uint32 { return code(s.mem.Write(dst, hostBytes(src, n))) })
}

func (s *Sim) cuMemcpyDtoH(dst unsafe.Pointer, src uint64, n uintptr) uint32 {
	return s.call(func() uint32 { return code(s.mem.Read(src, hostBytes(dst, n))) })
}

func (s *Sim) cuMemcpyDtoD(dst, src uint64, n uintptr) uint32 {
	return s.call(func() uint32 { return code(s.mem.Copy(dst, src, int(n))) })
}

func (s *Sim) cuMemsetD32(dst uint64, v uint32, count uintptr) uint32 {
	return s.call(func() uint32 { return code(s.mem.Set32(dst, v, int(count))) })
}

// load parses a module's NUL-terminated PTX; a module that does not parse
// is CUDA_ERROR_INVALID_PTX with the parser's error as the JIT log.
func (s *Sim) load(mod *uintptr, image unsafe.Pointer) (string, uint32) {
	m, err := ptxsim.Parse([]byte(gostring((*byte)(image))))
	if err != nil {
		return "ptxas application ptx input, " + err.Error(), cudadrv.CodeInvalidPTX
	}
	*mod = s.handle(m)
	return "", 0
}

func (s *Sim) cuModuleLoadData(mod *uintptr, image unsafe.Pointer) uint32 {
	return s.call(func() uint32 { _, r := s.load(mod, image); return r })
}

// cuModuleLoadDataEx honours the error-log options
// (CU_JIT_ERROR_LOG_BUFFER and its size), as cudadrv uses them.
func (s *Sim) cuModuleLoadDataEx(mod *uintptr, image unsafe.Pointer, n uint32, options *int32, values *uintptr) uint32 {
	return s.call(func() uint32 {
		log, r := s.load(mod, image)
		opts, vals := unsafe.Slice(options, n), unsafe.Slice(values, n)
		buf, size := slices.Index(opts, cudadrv.JITErrorLogBuffer), slices.Index(opts, cudadrv.JITErrorLogBufferSizeBytes)
		if buf >= 0 && size >= 0 && vals[size] > 0 {
			// The slot holds the address of the caller's pinned buffer.
			b := unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&vals[buf]))), vals[size])
			vals[size] = uintptr(copy(b[:len(b)-1], log))
			b[vals[size]] = 0
		}
		return r
	})
}

func (s *Sim) cuModuleGetFunction(fn *uintptr, mod uintptr, name *byte) uint32 {
	return s.call(func() uint32 {
		m, ok := s.handles[mod].(*ptxsim.Module)
		if !ok {
			return cudadrv.CodeInvalidHandle
		}
		k := m.Kernels[gostring(name)]
		if k == nil {
			return cudadrv.CodeNotFound
		}
		*fn = s.handle(function{k, mod})
		return 0
	})
}

// function is a kernel of a loaded module.
type function struct {
	k   *ptxsim.Kernel
	mod uintptr
}

// cuModuleUnload forgets the module and its functions.
func (s *Sim) cuModuleUnload(mod uintptr) uint32 {
	return s.call(func() uint32 {
		if _, ok := s.handles[mod].(*ptxsim.Module); !ok {
			return cudadrv.CodeInvalidHandle
		}
		for h, v := range s.handles {
			if f, ok := v.(function); ok && f.mod == mod || h == mod {
				delete(s.handles, h)
			}
		}
		return 0
	})
}

func (s *Sim) cuFuncGetAttribute(v *int32, attr int32, fn uintptr) uint32 {
	return s.call(func() uint32 {
		if _, ok := s.handles[fn].(function); !ok {
			return cudadrv.CodeInvalidHandle
		}
		if cudadrv.FuncAttribute(attr) != cudadrv.FuncMaxThreadsPerBlock {
			return cudadrv.CodeNotSupported
		}
		*v = int32(s.cfg.MaxThreadsPerBlock)
		return 0
	})
}

// cuLaunchKernel runs the kernel to its end: it copies each parameter's
// value, of the size its .param declaration gives, from where
// kernelParams[i] points, as the driver does. A fault is kept for the next
// synchronizing call.
func (s *Sim) cuLaunchKernel(fn uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params *unsafe.Pointer, extra uintptr) uint32 {
	return s.call(func() uint32 {
		f, ok := s.handles[fn].(function)
		k := f.k
		switch {
		case !ok || stream != 0:
			return cudadrv.CodeInvalidHandle
		case extra != 0 || params == nil && len(k.Params) > 0 || shared > maxShared:
			return cudadrv.CodeInvalidValue
		case int(bx)*int(by)*int(bz) > s.cfg.MaxThreadsPerBlock:
			return cudadrv.CodeLaunchOutOfResources
		}
		ptrs := unsafe.Slice(params, len(k.Params))
		args := make([][]byte, len(k.Params))
		for i, p := range k.Params {
			args[i] = append([]byte(nil), unsafe.Slice((*byte)(ptrs[i]), p.Size)...)
		}
		start := time.Now()
		st, err := k.Launch(s.mem, [3]uint32{gx, gy, gz}, [3]uint32{bx, by, bz}, args, ptxsim.Limits{Instructions: s.cfg.Instructions})
		s.elapsed += time.Since(start)
		s.stats.Instructions += st.Instructions
		s.stats.Threads += st.Threads
		if f, isFault := err.(*ptxsim.Fault); isFault {
			s.fault, s.faultCode = f, cudadrv.CodeIllegalAddress
			if f.Timeout {
				s.faultCode = cudadrv.CodeLaunchTimeout
			}
			return 0
		}
		return code(err)
	})
}

func (s *Sim) cuEventCreate(ev *uintptr, flags uint32) uint32 {
	return s.call(func() uint32 { *ev = s.handle(time.Time{}); return 0 })
}

func (s *Sim) cuEventRecord(ev, stream uintptr) uint32 {
	return s.call(func() uint32 {
		if _, ok := s.handles[ev].(time.Time); !ok {
			return cudadrv.CodeInvalidHandle
		}
		s.handles[ev] = time.Now()
		return 0
	})
}

func (s *Sim) cuEventElapsedTime(ms *float32, start, end uintptr) uint32 {
	return s.call(func() uint32 {
		a, ok1 := s.handles[start].(time.Time)
		b, ok2 := s.handles[end].(time.Time)
		if !ok1 || !ok2 || a.IsZero() || b.IsZero() {
			return cudadrv.CodeInvalidHandle
		}
		*ms = float32(b.Sub(a).Seconds() * 1e3)
		return 0
	})
}

func (s *Sim) cuEventSynchronize(ev uintptr) uint32 {
	return s.call(func() uint32 {
		if _, ok := s.handles[ev].(time.Time); !ok {
			return cudadrv.CodeInvalidHandle
		}
		return 0
	})
}

func (s *Sim) cuEventDestroy(ev uintptr) uint32 {
	return s.call(func() uint32 {
		if _, ok := s.handles[ev].(time.Time); !ok {
			return cudadrv.CodeInvalidHandle
		}
		delete(s.handles, ev)
		return 0
	})
}
