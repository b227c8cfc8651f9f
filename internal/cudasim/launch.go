package cudasim

import (
	"time"
	"unsafe"

	"github.com/fibergen/fibergen/internal/ptxsim"
	"github.com/fibergen/fibergen/runtime/cudadrv"
)

// The memory, module, kernel and event entry points.

func (s *Sim) cuMemAlloc(dptr *uint64, bytes uintptr) uint32 {
	return s.call(func() uint32 {
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
	return s.call(func() uint32 {
		b := make([]byte, n)
		if err := s.mem.Read(src, b); err != nil {
			return code(err)
		}
		return code(s.mem.Write(dst, b))
	})
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
		var buf []byte
		for i, o := range opts {
			if o == 5 { // CU_JIT_ERROR_LOG_BUFFER
				for j, p := range opts {
					if p == 6 { // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
						// The slot holds the address of the caller's pinned buffer.
						buf = unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&vals[i]))), vals[j])
						vals[j] = uintptr(copy(buf[:max(len(buf)-1, 0)], log))
						buf[vals[j]] = 0
					}
				}
			}
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
		*fn = s.handle(k)
		return 0
	})
}

func (s *Sim) cuModuleUnload(mod uintptr) uint32 {
	return s.call(func() uint32 {
		if _, ok := s.handles[mod].(*ptxsim.Module); !ok {
			return cudadrv.CodeInvalidHandle
		}
		delete(s.handles, mod)
		return 0
	})
}

func (s *Sim) cuFuncGetAttribute(v *int32, attr int32, fn uintptr) uint32 {
	return s.call(func() uint32 {
		if _, ok := s.handles[fn].(*ptxsim.Kernel); !ok {
			return cudadrv.CodeInvalidHandle
		}
		switch cudadrv.FuncAttribute(attr) {
		case cudadrv.FuncMaxThreadsPerBlock:
			*v = int32(s.cfg.MaxThreadsPerBlock)
		case cudadrv.FuncLocalSizeBytes:
			*v = 0
		default:
			return cudadrv.CodeNotSupported
		}
		return 0
	})
}

// cuLaunchKernel runs the kernel to its end: it copies each parameter's
// value, of the size its .param declaration gives, from where
// kernelParams[i] points, as the driver does. A fault is kept for the next
// synchronizing call.
func (s *Sim) cuLaunchKernel(fn uintptr, gx, gy, gz, bx, by, bz, shared uint32, stream uintptr, params *unsafe.Pointer, extra uintptr) uint32 {
	return s.call(func() uint32 {
		k, ok := s.handles[fn].(*ptxsim.Kernel)
		switch {
		case !ok || stream != 0:
			return cudadrv.CodeInvalidHandle
		case extra != 0 || params == nil && len(k.Params) > 0 || shared > 48<<10:
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
		if _, isFault := err.(*ptxsim.Fault); isFault {
			s.fault = err
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
		if !ok1 || !ok2 {
			return cudadrv.CodeInvalidHandle
		}
		*ms = float32(b.Sub(a).Seconds() * 1e3)
		return 0
	})
}

func (s *Sim) cuEventDestroy(ev uintptr) uint32 {
	return s.call(func() uint32 { delete(s.handles, ev); return 0 })
}
