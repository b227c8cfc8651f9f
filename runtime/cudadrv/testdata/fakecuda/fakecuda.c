// fakecuda.c is a stand-in for libcuda.so.1 with which the cudadrv tests can
// run on a machine without a GPU, to check how the binding calls the driver
// through purego (argument order and widths, the 11 arguments of
// cuLaunchKernel, output pointers, the JIT log buffer, the per-thread
// current context). "Device memory" is host memory and the only kernel is
// the tests' add_scalar, run on the CPU. It is not built by go build:
//
//	gcc -shared -fPIC -o /tmp/fakecuda/libcuda.so.1 runtime/cudadrv/testdata/fakecuda/fakecuda.c
//	CGO_ENABLED=0 go test -c -o /tmp/cudadrv.test ./runtime/cudadrv/
//	FIBERGEN_REQUIRE_CUDA=1 LD_LIBRARY_PATH=/tmp/fakecuda /tmp/cudadrv.test -test.v -test.short
//
// Timings it reports (the copy bandwidth) mean nothing.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUevent, *CUstream;

// FAKECUDA_TRACE=1 prints the arguments of launches and module loads.
static int trace(void) { return getenv("FAKECUDA_TRACE") != NULL; }
static int inited;
static char ctxobj;
static __thread void *current;
static int retains;

CUresult cuInit(unsigned flags) {
  if (flags != 0) return 1;
  if (getenv("FAKECUDA_NO_DEVICE")) return 100; // CUDA_ERROR_NO_DEVICE
  inited = 1;
  return 0;
}
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuGetErrorName(CUresult e, const char **s) {
  switch (e) {
  case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
  case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
  case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; return 0;
  case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; return 0;
  case 218: *s = "CUDA_ERROR_INVALID_PTX"; return 0;
  case 500: *s = "CUDA_ERROR_NOT_FOUND"; return 0;
  }
  *s = NULL; return 1;
}
CUresult cuGetErrorString(CUresult e, const char **s) {
  switch (e) {
  case 1: *s = "invalid argument"; return 0;
  case 100: *s = "no CUDA-capable device is detected"; return 0;
  case 101: *s = "invalid device ordinal"; return 0;
  case 201: *s = "invalid device context"; return 0;
  case 218: *s = "a PTX JIT compilation failed"; return 0;
  case 500: *s = "named symbol not found"; return 0;
  }
  *s = NULL; return 1;
}
#define NEEDINIT if (!inited) return 3
#define NEEDCTX if (current != &ctxobj) { fprintf(stderr, "fakecuda: %s without current context\n", __func__); return 201; }
CUresult cuDeviceGetCount(int *n) { NEEDINIT; *n = 1; return 0; }
CUresult cuDeviceGet(CUdevice *d, int ord) { NEEDINIT; if (ord != 0) return 101; *d = 0; return 0; }
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  if (d != 0 || len < 1) return 1;
  snprintf(name, len, "Fake GPU %d", len);
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
  if (d != 0) return 101;
  switch (attr) { case 75: *v = 9; return 0; case 76: *v = 0; return 0; case 16: *v = 132; return 0; case 10: *v = 32; return 0; }
  return 1;
}
CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { if (d != 0) return 101; *b = 85520809984ULL; return 0; }
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { if (d != 0) return 101; *c = &ctxobj; retains++; return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { if (d != 0) return 101; if (retains <= 0) return 1; retains--; return 0; }
CUresult cuCtxSetCurrent(CUcontext c) { if (c != NULL && c != &ctxobj) return 201; current = c; return 0; }
CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return 0; }
CUresult cuCtxSynchronize(void) { NEEDCTX; return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { NEEDCTX; if (n == 0) return 1; void *m = aligned_alloc(256, (n + 255) & ~255ULL); if (!m) return 2; *p = (CUdeviceptr)(uintptr_t)m; return 0; }
CUresult cuMemFree_v2(CUdeviceptr p) { NEEDCTX; free((void *)(uintptr_t)p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { NEEDCTX; memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { NEEDCTX; memcpy(d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { NEEDCTX; memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) { NEEDCTX; unsigned *p = (unsigned *)(uintptr_t)d; for (size_t i = 0; i < n; i++) p[i] = v; return 0; }

static char modobj, fnobj;
static CUresult loadmod(CUmodule *m, const void *image, char *log, size_t *logsize) {
  const char *ptx = image;
  if (strstr(ptx, "this_is_not_an_instruction")) {
    if (log) { int k = snprintf(log, *logsize, "ptxas application ptx input, line 11; error   : Unknown instruction 'this_is_not_an_instruction'"); *logsize = k + 1; }
    return 218;
  }
  if (!strstr(ptx, ".entry add_scalar(")) return 218;
  *m = &modobj; return 0;
}
CUresult cuModuleLoadData(CUmodule *m, const void *image) { NEEDCTX; return loadmod(m, image, NULL, NULL); }
CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, int *opts, void **vals) {
  NEEDCTX;
  char *log = NULL; size_t size = 0; int sizeidx = -1;
  for (unsigned i = 0; i < n; i++) {
    if (opts[i] == 5) log = vals[i];
    else if (opts[i] == 6) { size = (unsigned)(uintptr_t)vals[i]; sizeidx = i; }
    else return 1;
  }
  if (trace()) fprintf(stderr, "fakecuda: cuModuleLoadDataEx n=%u log=%p size=%zu\n", n, (void*)log, size);
  if (n != 2 || !log || size != 16384) return 1;
  // poison the upper bits, as a driver might, to check they are ignored
  CUresult r = loadmod(m, image, log, &size);
  vals[sizeidx] = (void *)(uintptr_t)(0xabcd000000000000ULL | size);
  return r;
}
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  NEEDCTX; if (m != &modobj) return 400;
  if (strcmp(name, "add_scalar") != 0) return 500;
  *f = &fnobj; return 0;
}
CUresult cuModuleUnload(CUmodule m) { NEEDCTX; return m == &modobj ? 0 : 400; }
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void **params, void **extra) {
  NEEDCTX;
  if (trace()) fprintf(stderr, "fakecuda: launch f=%p grid=%u,%u,%u block=%u,%u,%u shared=%u stream=%p params=%p extra=%p\n",
                       f, gx, gy, gz, bx, by, bz, shared, stream, (void*)params, (void*)extra);
  if (f != &fnobj || stream != NULL || extra != NULL || !params) return 1;
  if (gx == 0 || gy != 1 || gz != 1 || bx == 0 || by != 1 || bz != 1 || bx > 1024) return 1;
  if (shared != 0 && shared != 12345) return 1;
  float *x = (float *)(uintptr_t)*(unsigned long long *)params[0];
  float a = *(float *)params[1];
  unsigned n = *(unsigned *)params[2];
  if (trace()) fprintf(stderr, "fakecuda: x=%p a=%g n=%u\n", (void*)x, a, n);
  unsigned long long threads = (unsigned long long)gx * bx;
  for (unsigned long long t = 0; t < threads; t++)
    for (unsigned long long i = t; i < n; i += threads) x[i] = x[i] + a;
  return 0;
}
struct ev { double t; int recorded; };
CUresult cuEventCreate(CUevent *e, unsigned flags) { NEEDCTX; if (flags) return 1; *e = calloc(1, sizeof(struct ev)); return 0; }
CUresult cuEventRecord(CUevent e, CUstream s) {
  NEEDCTX; if (s) return 1; struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
  ((struct ev *)e)->t = ts.tv_sec * 1e3 + ts.tv_nsec / 1e6; ((struct ev *)e)->recorded = 1; return 0;
}
CUresult cuEventSynchronize(CUevent e) { NEEDCTX; return ((struct ev *)e)->recorded ? 0 : 400; }
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
  NEEDCTX; *ms = (float)(((struct ev *)b)->t - ((struct ev *)a)->t); if (*ms <= 0) *ms = 0.001f;
  if (trace()) fprintf(stderr, "fakecuda: elapsed %g ms\n", *ms);
  return 0;
}
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return cuEventElapsedTime_v2(ms, a, b); }
CUresult cuEventDestroy_v2(CUevent e) { NEEDCTX; free(e); return 0; }
