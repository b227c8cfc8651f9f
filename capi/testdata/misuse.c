/*
 * misuse.c: the C ABI (libfibergen.h) under misuse, as a C trainer might
 * misuse it. Each check prints "ok <name>" or "FAIL <name>: <why>"; the
 * exit status is the number of failures. python/tests/test_capi_c.py
 * compiles it against the library make python-lib builds and runs it on
 * the generated dp_sgd:
 *
 *	misuse GENERATED_DIR STATE_DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libfibergen.h" /* the functions, FG_OK and the other statuses, FG_ABI_VERSION */

static int failures;
static char err[2048];

static void check(const char *name, int cond, const char *why) {
	if (cond) {
		printf("ok %s\n", name);
	} else {
		printf("FAIL %s: %s (last error: %s)\n", name, why, err);
		failures++;
	}
}

/* refused says a call returned FG_ERROR with a message holding want. */
static void refused(const char *name, int status, const char *want) {
	check(name, status == FG_ERROR && strstr(err, want) != NULL, want);
}

static int64_t open_opt(const char *dir, const char *state) {
	char opts[1024];
	int64_t h = 0;
	snprintf(opts, sizeof opts, "{\"backend\": \"cpu\", \"state_dir\": \"%s\"}", state);
	if (fg_open((char *)dir, opts, &h, err, sizeof err) != FG_OK) {
		printf("FAIL open: %s\n", err);
		exit(100);
	}
	return h;
}

enum { N = 8, K = 3 };

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: misuse GENERATED_DIR STATE_DIR\n");
		return 100;
	}
	check("abi_version", fg_abi_version() == FG_ABI_VERSION, "the library's ABI version is not its header's");
	char dir[1024];
	snprintf(dir, sizeof dir, "%s/dp_sgd", argv[1]);
	int64_t h = open_opt(dir, argv[2]);
	float theta[N] = {0}, g[N] = {0}, rows[K * N], out[N];
	for (int i = 0; i < K * N; i++) rows[i] = (float)(i % 7) - 3;
	float *bufs[2] = {theta, g};
	check("use_buffers", fg_use_buffers(h, bufs, 2, N, err, sizeof err) == FG_OK, "use_buffers failed");
	check("set_dp", fg_set_dp(h, 1.0, 1.0, K, err, sizeof err) == FG_OK, "set_dp failed");

	/* Sizes that wrap: n*k = 2^64 wraps to 0, which once passed the NULL
	 * checks and faulted. */
	refused("privatize n*k overflow", fg_privatize(h, out, (int64_t)1 << 32, NULL, NULL, (int64_t)1 << 32, NULL, NULL, 0, NULL, NULL, err, sizeof err), "values");
	refused("privatize negative n", fg_privatize(h, out, -1, rows, NULL, K, NULL, NULL, 0, NULL, NULL, err, sizeof err), "values");
	refused("privatize huge k of no values", fg_privatize(h, out, 0, rows, NULL, INT64_MAX, NULL, NULL, 0, NULL, NULL, err, sizeof err), "values");
	refused("use_buffers huge n", fg_use_buffers(h, bufs, 2, INT64_MAX, err, sizeof err), "use_buffers");

	/* Trailing JSON is refused; nothing is set. */
	refused("set_hypers trailing JSON", fg_set_hypers(h, "{\"lr\":0.1}{}", err, sizeof err), "after the JSON value");
	refused("open options trailing JSON", fg_open(dir, "{}[]", &(int64_t){0}, err, sizeof err), "after the JSON value");

	/* Required output pointers are checked before anything changes. */
	refused("info NULL out", fg_info(h, NULL, err, sizeof err), "NULL");
	refused("spent NULL out", fg_spent(h, NULL, err, sizeof err), "NULL");
	refused("share_key NULL out", fg_share_key(h, NULL, err, sizeof err), "NULL");
	refused("set_key NULL key", fg_set_key(h, NULL, err, sizeof err), "NULL");
	uint64_t key[4] = {1, 2, 3, 4};
	refused("share_key in philox mode", fg_share_key(h, key, err, sizeof err), "no key");
	refused("set_key in philox mode", fg_set_key(h, key, err, sizeof err), "no key");
	refused("open options unknown noise_mode", fg_open(dir, "{\"noise_mode\": \"fast\"}", &(int64_t){0}, err, sizeof err),
		"want philox or secure");

	/* Secure mode: a key of four words goes out and comes back; the zero key is refused. */
	char sopts[1024];
	snprintf(sopts, sizeof sopts, "{\"backend\": \"cpu\", \"state_dir\": \"%s\", \"noise_mode\": \"secure\"}", argv[2]);
	int64_t sh = 0;
	check("open secure", fg_open(dir, sopts, &sh, err, sizeof err) == FG_OK, "open with noise_mode secure failed");
	uint64_t shared[4] = {0}, zero[4] = {0}, back[4] = {0};
	check("share_key", fg_share_key(sh, shared, err, sizeof err) == FG_OK && (shared[0] | shared[1] | shared[2] | shared[3]) != 0,
	      "no key shared");
	refused("set_key zero", fg_set_key(sh, zero, err, sizeof err), "zero key");
	check("set_key", fg_set_key(sh, key, err, sizeof err) == FG_OK && fg_share_key(sh, back, err, sizeof err) == FG_OK &&
	      memcmp(back, key, sizeof key) == 0, "the key set is not the key shared");
	refused("set_seed in secure mode", fg_set_seed(sh, 7, err, sizeof err), "takes no seed");
	fg_close(sh, err, sizeof err);
	refused("set_budget NULL sigma",
		fg_set_budget(h, "{\"epsilon\": 1, \"clip\": 1, \"dataset_size\": 1000, \"batch_size\": 3, \"epochs\": 1}", NULL, err, sizeof err),
		"NULL");

	/* No step without a new gradient; a raw gradient is not released. */
	int64_t index = -1;
	float value = 0;
	refused("step before any gradient", fg_step(h, &index, &value, err, sizeof err), "no gradient for buffer g");
	g[0] = 32.6f;
	check("gradient_written", fg_gradient_written(h, err, sizeof err) == FG_OK, "gradient_written failed");
	refused("step on a raw gradient", fg_step(h, NULL, NULL, err, sizeof err), "written outside Privatize");

	/* Optional outputs may be NULL: the privatization runs, and marks g. */
	check("privatize with NULL clipped and bad",
	      fg_privatize(h, g, N, rows, NULL, K, NULL, NULL, 0, NULL, NULL, err, sizeof err) == FG_OK, "privatize failed");
	check("step on the privatized gradient", fg_step(h, NULL, NULL, err, sizeof err) == FG_OK, "step failed");
	refused("a second step on it", fg_step(h, NULL, NULL, err, sizeof err), "no gradient for buffer g");

	/* Privatized into other memory: not the gradient the step reads. */
	int64_t clipped = -1;
	check("privatize elsewhere", fg_privatize(h, out, N, rows, NULL, K, NULL, NULL, 0, &clipped, NULL, err, sizeof err) == FG_OK && clipped >= 0,
	      "privatize failed");
	refused("step after privatizing elsewhere", fg_step(h, NULL, NULL, err, sizeof err), "no gradient for buffer g");

	/* Trust vouches for a gradient written since the last step, and only
	 * for the next step: it does not make a released gradient new. */
	refused("trust without a new gradient", fg_trust_clipped_gradient(h, err, sizeof err), "no gradient in buffer g");
	g[1] = 0.25f;
	fg_gradient_written(h, err, sizeof err);
	check("trust_clipped_gradient", fg_trust_clipped_gradient(h, err, sizeof err) == FG_OK, "trust failed");
	check("step on a trusted gradient", fg_step(h, NULL, NULL, err, sizeof err) == FG_OK, "step failed");
	refused("trust again after the step", fg_trust_clipped_gradient(h, err, sizeof err), "no gradient in buffer g");

	/* A checkpoint resumes once: the second load of its bytes is refused. */
	void *ckpt = NULL;
	size_t len = 0;
	refused("save NULL out", fg_save(h, NULL, 0, 0, NULL, &len, err, sizeof err), "NULL");
	check("save", fg_save(h, NULL, 0, 0, &ckpt, &len, err, sizeof err) == FG_OK, "save failed");
	int64_t a = open_opt(dir, argv[2]), b = open_opt(dir, argv[2]);
	float ta[N], ga[N], tb[N], gb[N];
	float *ba[2] = {ta, ga}, *bb[2] = {tb, gb};
	fg_use_buffers(a, ba, 2, N, err, sizeof err);
	fg_use_buffers(b, bb, 2, N, err, sizeof err);
	check("first load", fg_load(a, ckpt, len, NULL, 0, 0, err, sizeof err) == FG_OK, "load failed");
	refused("second load of the same bytes", fg_load(b, ckpt, len, NULL, 0, 0, err, sizeof err), "resumed before");
	refused("load of NULL bytes", fg_load(b, NULL, 10, NULL, 0, 0, err, sizeof err), "NULL");
	fg_free(ckpt);

	fg_close(a, err, sizeof err);
	fg_close(b, err, sizeof err);
	fg_close(h, err, sizeof err);
	refused("a closed handle", fg_step(h, NULL, NULL, err, sizeof err), "closed");
	return failures;
}
