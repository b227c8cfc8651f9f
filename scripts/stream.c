/* stream.c: STREAM's copy and triad in C, the check of fibergen bench's
 * baseline (docs/benchmarks.md). Built as STREAM is usually built:
 *
 *   gcc -O3 -march=native -fopenmp scripts/stream.c -o /tmp/stream
 *   OMP_NUM_THREADS=2 /tmp/stream [BYTES]   # bytes each kernel moves; default 805306368
 *
 * Each kernel moves BYTES (copy: 2 arrays of BYTES/8 floats; triad: 3 of
 * BYTES/12), counted as STREAM counts them (no read for ownership); it
 * prints the best of 20 runs of each, in GB/s (10^9 bytes), as STREAM does.
 * float32, as fibergen's buffers are. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static double best(double a, double b) { return a < b ? a : b; }

int main(int argc, char **argv) {
	long bytes = argc > 1 ? atol(argv[1]) : 805306368L;
	long nc = bytes / 8, nt = bytes / 12;
	float *a = aligned_alloc(64, nc * sizeof(float) + 64);
	float *b = aligned_alloc(64, nc * sizeof(float) + 64);
	float *c = aligned_alloc(64, nc * sizeof(float) + 64);
	if (!a || !b || !c) return 1;
#pragma omp parallel for
	for (long i = 0; i < nc; i++) a[i] = 0, b[i] = (float)(i % 1000) * 0.001f, c[i] = 1;
	double tc = 1e30, tt = 1e30;
	for (int k = 0; k < 20; k++) {
		double t0 = omp_get_wtime();
#pragma omp parallel for
		for (long i = 0; i < nc; i++) a[i] = b[i];
		double t1 = omp_get_wtime();
#pragma omp parallel for
		for (long i = 0; i < nt; i++) a[i] = b[i] + 3.0f * c[i];
		double t2 = omp_get_wtime();
		tc = best(tc, t1 - t0), tt = best(tt, t2 - t1);
	}
	printf("threads %d  bytes %ld  copy %.1f GB/s  triad %.1f GB/s  (a[1] = %g)\n", omp_get_max_threads(), bytes,
	       8.0 * nc / tc / 1e9, 12.0 * nt / tt / 1e9, a[1]);
	return 0;
}
