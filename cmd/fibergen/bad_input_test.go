package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// badCase is one bad command line. Exit status 2 is for a malformed command
// line (unknown command or flag, wrong number of files, a missing or
// malformed flag value); 1 is for bad input that needs the files to find
// (a missing or unreadable file, DSL errors, a bad .npy, a --set the
// optimizer rejects, an unwritable output).
type badCase struct {
	name string
	// args is split on spaces after replacing $RUN with a complete good
	// run command line, $D with the fixture directory and $OUT with the
	// output path (a file for run, a directory for build).
	args string
	code int
	msg  string // a regexp that stderr must match
	// stdout is a regexp that stdout must match; empty: stdout stays empty
	// (check prints ok for the good files of the line).
	stdout string
	// dsl marks DSL diagnostics: file:line:col: message, the source line
	// and a caret, for every error.
	dsl      bool
	skipRoot bool // root can read a file of mode 000 and write anywhere
}

// runLine is a good run command line; a case appends flags that override.
const runLine = "run $D/dp_sgd.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --noise off"

var badCases = []badCase{
	// Usage errors.
	{name: "no command", args: "", code: 2, msg: `^fibergen: no command \(want bench, build, cache, check, explain, mechanism, privacy or run`},
	{name: "unknown command", args: "frobnicate $D/fiber.dsl", code: 2, msg: `unknown command "frobnicate" \(want bench, build, cache, check, explain, mechanism, privacy or run\)`},
	{name: "unknown flag build", args: "build --zzz $D/fiber.dsl -o $OUT", code: 2, msg: `^fibergen build: unknown flag --zzz \(fibergen help lists the flags of every command\)\n$`},
	{name: "unknown flag run", args: "$RUN --lr 0.1", code: 2, msg: `^fibergen run: unknown flag --lr `},
	{name: "unknown flag explain", args: "explain $D/fiber.dsl -o $OUT", code: 2, msg: `^fibergen explain: unknown flag -o `},
	{name: "flag without value", args: "build $D/fiber.dsl -o", code: 2, msg: `^fibergen build: -o needs a value\n$`},
	{name: "build empty -o", args: "build $D/fiber.dsl -o=", code: 2, msg: `^fibergen build: -o needs a directory`},
	{name: "build no files", args: "build -o $OUT", code: 2, msg: `^fibergen build: no \.dsl files given`},
	{name: "build --params unknown", args: "build $D/fiber.dsl -o $OUT --params f64", code: 2, msg: `^fibergen build: --params "f64": want f32, bf16 or f16, then "stochastic" or nothing`},
	{name: "build --params stochastic f32", args: "build $D/fiber.dsl -o $OUT --params f32,stochastic", code: 2, msg: `^fibergen build: --params "f32,stochastic": want f32`},
	{name: "bench dir --params", args: "bench $D --params bf16", code: 2, msg: `^fibergen bench: --params applies to a source: the kernels of .* store the parameters as they were built`},
	{name: "build -o twice", args: "build $D/fiber.dsl -o $OUT -o $OUT", code: 2, msg: `^fibergen build: -o given twice`},
	{name: "run --out twice", args: "run $D/dp_sgd.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --out $OUT", code: 2, msg: `^fibergen run: --out given twice`},
	{name: "set twice", args: "explain $D/fiber.dsl --set omega=0.5 --set omega=0.6", code: 2, msg: `omega is set twice \(omega=0\.5, then omega=0\.6\)`},
	{name: "check no files", args: "check", code: 2, msg: `^fibergen check: no \.dsl files given`},
	{name: "explain no file", args: "explain --json", code: 2, msg: `^fibergen explain: want exactly one \.dsl file or shipped optimizer name, got 0`},
	{name: "explain two files", args: "explain $D/fiber.dsl $D/dp_sgd.dsl", code: 2, msg: `want exactly one \.dsl file or shipped optimizer name, got 2`},
	{name: "run --group backwards", args: runLine + " --group 3:1:lr=0.1", code: 2, msg: `^fibergen run: --group "3:1:lr=0.1": want LO:HI:name=value\[,name=value\.\.\.\] with 0 <= LO < HI`},
	{name: "run --group overlapping", args: runLine + " --group 0:2:lr=0.1 --group 1:3:lr=0.2", code: 2, msg: `^fibergen run: --group "1:3:lr=0.2": overlaps --group "0:2:lr=0.1"`},
	{name: "run --group not a number", args: runLine + " --group 0:2:lr=x", code: 2, msg: `^fibergen run: --group "0:2:lr=x": malformed setting "lr=x": x is not a number`},
	{name: "run --tensors not a number", args: runLine + " --tensors 3,x", code: 2, msg: `^fibergen run: --tensors "3,x": want sizes or shapes N\[,RxC\.\.\.\], each dimension a whole number > 0`},
	{name: "run --tensors zero", args: runLine + " --tensors 1,0,3", code: 2, msg: `^fibergen run: --tensors "1,0,3": want sizes or shapes N\[,RxC\.\.\.\], each dimension a whole number > 0`},
	{name: "run --tensors shape zero", args: runLine + " --tensors 3x0", code: 2, msg: `^fibergen run: --tensors "3x0": want sizes or shapes N\[,RxC\.\.\.\], each dimension a whole number > 0`},
	{name: "run --tensors shape too large", args: runLine + " --tensors 99999999999x99999999999", code: 2, msg: `^fibergen run: --tensors "99999999999x99999999999": 99999999999x99999999999: a tensor of more than 2\^40 coordinates`},
	{name: "run --tensors short", args: runLine + " --tensors 1,2", code: 1, msg: `^fibergen run: --tensors 1,2: the sizes sum to 3, theta has 4 coordinates`},
	{name: "run --tensors cut by --group", args: runLine + " --tensors 1,3 --group 0:2:lr=0.1", code: 1, msg: `^fibergen run: --group 0:2:lr=0.1: cuts a tensor of --tensors 1,3 \(a group holds whole tensors\)`},
	{name: "run --group past theta", args: runLine + " --group 2:9:lr=0.1", code: 1, msg: `^fibergen run: --group 2:9:lr=0.1: theta has 4 coordinates`},
	{name: "run --group unknown hyper", args: runLine + " --group 0:2:zeta=1", code: 1, msg: `^fibergen run: --group 0:2:zeta=1: dp_sgd has no hyper zeta`},
	{name: "run --group out of range", args: "run $D/fiber.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --noise off --group 0:2:beta1=1", code: 1, msg: `^fibergen run: --group 0:2:beta1=1: hyper beta1 = 1 is outside its range \[0, 1\)`},
	{name: "run --group observation", args: "run $D/fiber.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --noise off --group 0:2:kappa=0.5", code: 1, msg: `^fibergen run: --group 0:2:kappa=0.5: hyper kappa shapes the observation, which is one for all tensors; it cannot differ per tensor`},
	{name: "run no file", args: "run --grads $D/grads.npy --theta $D/theta.npy --out $OUT --noise off", code: 2, msg: `^fibergen run: want exactly one \.dsl file or shipped optimizer name, got 0`},
	{name: "run two files", args: "$RUN $D/fiber.dsl", code: 2, msg: `want exactly one \.dsl file or shipped optimizer name, got 2`},
	{name: "run without --grads", args: "run $D/dp_sgd.dsl --theta $D/theta.npy --out $OUT", code: 2, msg: `--grads \(or --example-grads\), --theta and --out are required`},
	{name: "run without --theta", args: "run $D/dp_sgd.dsl --grads $D/grads.npy --out $OUT", code: 2, msg: `--grads \(or --example-grads\), --theta and --out are required`},
	{name: "run without --out", args: "run $D/dp_sgd.dsl --grads $D/grads.npy --theta $D/theta.npy", code: 2, msg: `--grads \(or --example-grads\), --theta and --out are required`},
	{name: "sigma-w2 negative", args: "$RUN --sigma-w2 -1", code: 2, msg: `--sigma-w2 -1: want a finite value >= 0`},
	{name: "sigma-w2 nan", args: "$RUN --sigma-w2 nan", code: 2, msg: `--sigma-w2 NaN: want a finite value >= 0`},
	{name: "sigma-w2 inf", args: "$RUN --sigma-w2 inf", code: 2, msg: `--sigma-w2 \+Inf: want a finite value >= 0`},
	{name: "sigma-w2 not a number", args: "$RUN --sigma-w2 abc", code: 2, msg: `^fibergen run: --sigma-w2 "abc": want a number`},
	{name: "sigma-w2 overflows", args: "$RUN --sigma-w2 1e400", code: 2, msg: `^fibergen run: --sigma-w2 "1e400": out of the float64 range`},
	{name: "noise maybe", args: "$RUN --noise maybe", code: 2, msg: `--noise "maybe": want on or off`},
	{name: "backend gpu", args: "$RUN --backend gpu", code: 2, msg: `--backend "gpu": want go, cpu or ptxsim`},
	{name: "clip without example grads", args: "$RUN --clip 1", code: 2, msg: `^fibergen run: --clip works only with --example-grads`},
	{name: "grads and example grads", args: "$RUN --example-grads $D/rank3.npy --clip 1", code: 2, msg: `--grads and --example-grads are alternatives`},
	{name: "example grads without clip", args: "run $D/dp_sgd.dsl --example-grads $D/rank3.npy --theta $D/theta.npy --out $OUT", code: 2, msg: `--example-grads needs --clip C with C > 0 finite \(got 0\)`},
	{name: "clip groups without example grads", args: "$RUN --clip-groups 4:1", code: 2, msg: `^fibergen run: --clip-groups works only with --example-grads`},
	{name: "clip and clip groups", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip 1 --clip-groups 4:1 --noise off --theta $D/theta.npy --out $OUT", code: 2, msg: `^fibergen run: --clip and --clip-groups are alternatives`},
	{name: "clip groups norm 0", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip-groups 2:1,2:0 --noise off --theta $D/theta.npy --out $OUT", code: 2, msg: `^fibergen run: --clip-groups "2:1,2:0": want N:C\[,N:C...\], each N a whole number > 0 and C a finite number > 0`},
	{name: "clip groups NaN", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip-groups 4:NaN --noise off --theta $D/theta.npy --out $OUT", code: 2, msg: `--clip-groups "4:NaN": want N:C`},
	{name: "clip groups short", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip-groups 1:1,2:1 --noise-multiplier 1 --theta $D/theta.npy --out $OUT", code: 1, msg: `--clip-groups 1:1,2:1: the sizes sum to 3, theta has 4 coordinates`},
	{name: "clip groups cut a tensor", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip-groups 1:1,3:1 --tensors 2,2 --noise-multiplier 1 --theta $D/theta.npy --out $OUT", code: 1, msg: `--clip-groups 1:1,3:1: cuts a tensor of --tensors 2,2`},
	{name: "clip groups on ptxsim", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip-groups 4:1 --noise-multiplier 1 --backend ptxsim --theta $D/theta.npy --out $OUT", code: 2, msg: `^fibergen run: --clip-groups with --backend ptxsim: the device privatizes each group's rows as a matrix of their own`},
	{name: "proportional without groups", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip 1 --proportional-noise --noise off --theta $D/theta.npy --out $OUT", code: 2, msg: `^fibergen run: --proportional-noise shares the noise among clip groups: give --clip-groups`},
	{name: "example grads with sigma-w2", args: "run $D/dp_sgd.dsl --example-grads $D/rank3.npy --clip 1 --sigma-w2 1 --theta $D/theta.npy --out $OUT", code: 2, msg: `give --noise-multiplier, not --sigma-w2`},
	{name: "example grads without noise", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip 1 --theta $D/theta.npy --out $OUT", code: 2, msg: `^fibergen run: --example-grads needs the noise given explicitly: --noise-multiplier S \(σ_DP\), or --noise off for no noise \(not private\)`},
	{name: "example grads noise on without multiplier", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip 1 --noise on --theta $D/theta.npy --out $OUT", code: 2, msg: `--example-grads needs the noise given explicitly`},
	{name: "example grads noise off and multiplier", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip 1 --noise off --noise-multiplier 1 --theta $D/theta.npy --out $OUT", code: 2, msg: `^fibergen run: --noise off and --noise-multiplier are alternatives: give --noise-multiplier S, or --noise off for no noise \(not private\)`},
	{name: "example grads negative multiplier", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip 1 --noise-multiplier -1 --theta $D/theta.npy --out $OUT", code: 2, msg: `--noise-multiplier -1: want a finite value >= 0`},
	{name: "grads without sigma-w2", args: "run $D/dp_sgd.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT", code: 2, msg: `^fibergen run: --grads with --noise on \(the default\) needs the noise given explicitly: --sigma-w2 X, or --noise off for gradients privatized already`},
	{name: "grads noise on without sigma-w2", args: "$RUN --noise on", code: 2, msg: `--grads with --noise on \(the default\) needs the noise given explicitly`},
	{name: "seed negative", args: "$RUN --seed -1", code: 2, msg: `^fibergen run: --seed "-1": want an integer from 0 to 2\^64-1`},
	{name: "seed not a number", args: "$RUN --seed abc", code: 2, msg: `^fibergen run: --seed "abc": want an integer`},

	// Missing and unreadable .dsl files.
	{name: "build missing file", args: "build $D/nope.dsl -o $OUT", code: 1, msg: `^fibergen: cannot read \S*/nope\.dsl: no such file or directory`},
	{name: "check missing file", args: "check $D/fiber.dsl $D/nope.dsl", code: 1, msg: `cannot read \S*/nope\.dsl: no such file or directory`, stdout: `^\S*/fiber\.dsl: ok\n$`},
	{name: "run missing file", args: "run $D/nope.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --noise off", code: 1, msg: `cannot read \S*/nope\.dsl: no such file or directory`},
	{name: "directory as file", args: "build $D/adir -o $OUT", code: 1, msg: `\S*/adir is a directory: want a \.dsl file or a shipped optimizer's name; a directory fibergen build wrote is for bench`},
	{name: "unreadable file", args: "check $D/noread.dsl", code: 1, msg: `cannot read \S*/noread\.dsl: permission denied`, skipRoot: true},

	// DSL errors.
	{name: "build broken dsl", args: "build $D/broken.dsl -o $OUT", code: 1, dsl: true, msg: `broken\.dsl:10:6: undefined: beta1`},
	{name: "check broken dsl", args: "check $D/fiber.dsl $D/broken.dsl", code: 1, dsl: true, msg: `broken\.dsl:5:7: lr redeclared`, stdout: `^\S*/fiber\.dsl: ok\n$`},
	{name: "explain broken dsl", args: "explain $D/broken.dsl", code: 1, dsl: true, msg: `broken\.dsl:13:1: expected expression, found '}'`},
	{name: "run broken dsl", args: "run $D/broken.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --noise off", code: 1, dsl: true, msg: `broken\.dsl:11:23: undefined: mhat`},
	{name: "empty dsl", args: "check $D/empty.dsl", code: 1, dsl: true, msg: `empty\.dsl:1:1: missing optimizer declaration`},
	{name: "build same optimizer twice", args: "build $D/dp_sgd.dsl $D/dp_sgd_copy.dsl -o $OUT", code: 1, msg: `^fibergen: \S*/dp_sgd\.dsl and \S*/dp_sgd_copy\.dsl both declare optimizer dp_sgd`},
	{name: "check same optimizer twice", args: "check $D/dp_sgd_copy.dsl $D/dp_sgd.dsl", code: 1, msg: `both declare optimizer dp_sgd`, stdout: `^\S*/dp_sgd_copy\.dsl: ok\n$`},

	// Hyper settings.
	{name: "explain unknown hyper", args: "explain $D/fiber.dsl --set momentum=0.9", code: 1, msg: `^fibergen explain: fiber has no hyper momentum \(its hypers: lr, beta1, .*eps_v\)`},
	{name: "explain hyper out of range", args: "explain $D/fiber.dsl --set beta1=1", code: 1, msg: `hyper beta1 = 1 is outside its range \[0, 1\)`},
	{name: "explain hyper below range", args: "explain $D/fiber.dsl --set lr=-1", code: 1, msg: `hyper lr = -1 is outside its range \[0, inf\)`},
	{name: "explain unstable filter", args: "explain $D/abtrack.dsl --set beta=3.5", code: 1, msg: `^fibergen explain: the filter of state gt is unstable at alpha=0.5, beta=3.5: its spectral radius is [0-9.]+, not below 1 \(it is stable where beta > 0 and 4 - 2 \* alpha - beta > 0 and alpha > 0 and 2 - alpha > 0\)`},
	{name: "run unstable filter", args: "run $D/abtrack.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --noise off --set alpha=1.9 --set beta=0.5", code: 1, msg: `the filter of state gt is unstable at alpha=1.9, beta=0.5`},
	{name: "check unstable defaults", args: "check $D/unstable.dsl", code: 1, dsl: true, msg: `unstable.dsl:6:18: attenuation\(x\) at the defaults: the filter of state x is unstable at k=2.5: its spectral radius is 1.5, not below 1 \(it is stable where k > 0 and 2 - k > 0\)`},
	{name: "check attenuation through sign", args: "check $D/signed.dsl", code: 1, dsl: true, msg: `signed.dsl:7:18: attenuation\(c\): no linear filter with fixed coefficients carries the noise to c: in ` + "`c = sign\\(m\\)` \\(line 6\\), `sign\\(m\\)` applies sign to a noisy value"},
	{name: "check attenuation through select", args: "check $D/selected.dsl", code: 1, dsl: true, msg: `selected.dsl:5:18: attenuation\(m\): no linear filter with fixed coefficients carries the noise to m: in ` + "`m = select\\(g > 0, 0.9 \\* m \\+ g, m\\)` \\(line 4\\), `g > 0` compares a noisy value"},
	{name: "check nonlinear attenuation", args: "check $D/nonlinear.dsl", code: 1, dsl: true, msg: `nonlinear.dsl:5:18: attenuation_t\(x\): no linear filter with fixed coefficients carries the noise to x: in ` + "`x = 0.5 \\* x \\+ g \\* g` \\(line 4\\), `g \\* g` multiplies two noisy values"},
	{name: "explain setting without =", args: "explain $D/fiber.dsl --set lr", code: 2, msg: `^fibergen explain: --set "lr": malformed setting "lr": want name=value`},
	{name: "explain setting without name", args: "explain $D/fiber.dsl --set =1", code: 2, msg: `^fibergen explain: --set "=1": malformed setting "=1": want name=value`},
	{name: "explain setting without value", args: "explain $D/fiber.dsl --set lr=", code: 2, msg: `^fibergen explain: --set "lr=": malformed setting "lr=": want name=value`},
	{name: "explain setting not a number", args: "explain $D/fiber.dsl --set lr=x", code: 2, msg: `^fibergen explain: --set "lr=x": malformed setting "lr=x": x is not a number`},
	{name: "explain hyper NaN", args: "explain $D/fiber.dsl --set lr=NaN", code: 1, msg: `hyper lr = NaN: value must be finite`},
	{name: "explain hyper Inf", args: "explain $D/fiber.dsl --set wd=Inf", code: 1, msg: `hyper wd = \+Inf: value must be finite`},
	{name: "run unknown hyper", args: "$RUN --set beta1=0.9", code: 1, msg: `^fibergen run: dp_sgd has no hyper beta1 \(its hypers: lr\)`},
	{name: "run hyper out of range", args: "$RUN --set lr=-1", code: 1, msg: `hyper lr = -1 is outside its range \[0, inf\)`},
	{name: "run extrapolating observation", args: "run $D/fiber.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --set gamma=0.4 --noise off", code: 1, msg: `^fibergen run: observe two_point: a = \(1 - kappa\) / \(kappa \* gamma\) = 1.66667 at kappa=0.6, gamma=0.4, step 0, is outside \[0, 1\]: .*opt in explicitly \(--allow-extrapolation\)`},
	{name: "run infinite observation weight", args: "run $D/fiber.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --set gamma=1e-320 --allow-extrapolation --noise off", code: 1, msg: `^fibergen run: observe two_point: a = \(1 - kappa\) / \(kappa \* gamma\) is \+Inf at kappa=0.6, gamma=1e-320, step 0: the observation's arguments must be finite`},
	{name: "explain infinite host value", args: "explain $D/fiber.dsl --set lr=1e308 --set wd=1e308", code: 1, msg: `^fibergen explain: the host value S\d+ = 1 - lr \* wd is -Inf at .*lr=1e\+308.*: it must be finite`},
	{name: "run infinite host value", args: "run $D/fiber.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --set lr=1e308 --set wd=1e308 --noise off", code: 1, msg: `the host value S\d+ = 1 - lr \* wd is -Inf at .*: it must be finite`},
	{name: "run unstable state", args: "run $D/rho.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --noise off --set rho=1.2", code: 1, msg: `^fibergen run: the filter of state c is unstable at rho=1.2: its spectral radius is 1.2, above 1, so c grows without bound \(it is stable where 1 - rho > 0 and 1 \+ rho > 0\)`},
	{name: "explain unstable state", args: "explain $D/rho.dsl --set rho=-1.5", code: 1, msg: `^fibergen explain: the filter of state c is unstable at rho=-1.5: its spectral radius is 1.5, above 1, so c grows without bound`},
	{name: "run malformed setting", args: "$RUN --set lr=1,2", code: 2, msg: `^fibergen run: --set "lr=1,2": malformed setting "lr=1,2"`},

	// Bad .npy inputs.
	{name: "grads missing file", args: "$RUN --grads $D/nope.npy", code: 1, msg: `^fibergen run: --grads: cannot read \S*/nope\.npy: no such file or directory`},
	{name: "theta missing file", args: "$RUN --theta $D/nope.npy", code: 1, msg: `--theta: cannot read \S*/nope\.npy: no such file or directory`},
	{name: "grads directory", args: "$RUN --grads $D/adir", code: 1, msg: `--grads: cannot read \S*/adir: is a directory`},
	{name: "grads random bytes", args: "$RUN --grads $D/random.npy", code: 1, msg: `--grads \S*/random\.npy: not a \.npy file: bad magic`},
	{name: "grads text file", args: "$RUN --grads $D/text.npy", code: 1, msg: `--grads \S*/text\.npy: not a \.npy file: bad magic "0\.1 0\."`},
	{name: "grads empty file", args: "$RUN --grads $D/empty.npy", code: 1, msg: `--grads \S*/empty\.npy: not a \.npy file: it is empty`},
	{name: "grads float64", args: "$RUN --grads $D/f64.npy", code: 1, msg: `--grads \S*/f64\.npy: dtype is float64 \('<f8'\); need float32`},
	{name: "grads int32", args: "$RUN --grads $D/i32.npy", code: 1, msg: `--grads \S*/i32\.npy: dtype is int32 \('<i4'\); need float32`},
	{name: "theta float64", args: "$RUN --theta $D/f64.npy", code: 1, msg: `--theta \S*/f64\.npy: dtype is float64`},
	{name: "grads rank 1", args: "$RUN --grads $D/rank1.npy", code: 1, msg: `--grads \S*/rank1\.npy has shape \(12,\); want a matrix \[T, n\]`},
	{name: "grads rank 3", args: "$RUN --grads $D/rank3.npy", code: 1, msg: `--grads \S*/rank3\.npy has shape \(3, 2, 2\); want a matrix \[T, n\]`},
	{name: "grads rank 0", args: "$RUN --grads $D/scalar.npy", code: 1, msg: `--grads \S*/scalar\.npy has shape \(\); want a matrix`},
	{name: "theta rank 2", args: "$RUN --theta $D/theta2d.npy", code: 1, msg: `--theta \S*/theta2d\.npy has shape \(2, 2\); want a vector \[n\]`},
	{name: "grads and theta swapped", args: "$RUN --grads $D/theta.npy --theta $D/grads.npy", code: 1, msg: `--theta \S*/grads\.npy has shape \(3, 4\); want a vector`},
	{name: "T x n mismatch", args: "$RUN --grads $D/wide.npy", code: 1, msg: `--grads \S*/wide\.npy has shape \(3, 5\) but --theta has 4 coordinates`},
	{name: "example grads rank 2", args: "run $D/dp_sgd.dsl --example-grads $D/grads.npy --clip 1 --theta $D/theta.npy --out $OUT --noise-multiplier 1", code: 1, msg: `--example-grads \S*/grads\.npy has shape \(3, 4\); want \[T, B, n\]`},
	{name: "example grads wrong n", args: "run $D/dp_sgd.dsl --example-grads $D/rank3.npy --clip 1 --theta $D/theta.npy --out $OUT --noise-multiplier 1", code: 1, msg: `--example-grads \S*/rank3\.npy has shape \(3, 2, 2\) but --theta has 4 coordinates`},
	{name: "lookahead grads without two_point", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --lookahead-grads $D/examples.npy --clip 1 --theta $D/theta.npy --out $OUT --noise-multiplier 1", code: 1, msg: `^fibergen run: --lookahead-grads: dp_sgd has no two-point observation .*: leave --lookahead-grads out`},
	{name: "two_point without lookahead grads", args: "run $D/fiber.dsl --example-grads $D/examples.npy --clip 1 --theta $D/theta.npy --out $OUT --noise-multiplier 1", code: 1, msg: `^fibergen run: --lookahead-grads: fiber observes two points \(a = 0\.95\d*\): give the per-example gradients at the look-ahead point too`},
	{name: "theta NaN", args: "$RUN --theta $D/theta_nan.npy", code: 1, msg: `^fibergen run: --theta \S*/theta_nan\.npy: theta\[2\] is NaN; the parameters must be finite\n`},
	{name: "theta -Inf", args: "$RUN --theta $D/theta_inf.npy", code: 1, msg: `^fibergen run: --theta \S*/theta_inf\.npy: theta\[0\] is -Inf; the parameters must be finite\n`},
	{name: "theta NaN, per-example gradients", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip 1 --noise-multiplier 1 --theta $D/theta_nan.npy --out $OUT", code: 1, msg: `^fibergen run: --theta \S*/theta_nan\.npy: theta\[2\] is NaN`},
	{name: "lookahead-out without two_point", args: "$RUN --lookahead-out $D/ahead.npy", code: 1, msg: `^fibergen run: --lookahead-out: dp_sgd has no two_point observation, so no look-ahead point`},
	{name: "state-out unknown state", args: "$RUN --state-out m=$D/m.npy", code: 1, msg: `^fibergen run: --state-out m=\S*/m\.npy: dp_sgd has no state m \(it has no states\)`},
	{name: "state-out without a file", args: "$RUN --state-out m", code: 2, msg: `^fibergen run: --state-out "m": want NAME=FILE\.npy, NAME a state of the optimizer\n$`},
	{name: "state-out onto --out", args: "run $D/fiber.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --noise off --state-out m=$OUT", code: 1, msg: `^fibergen run: --state-out m \S+ is the file of --out: give each output a file of its own`},
	{name: "grads fortran order", args: "$RUN --grads $D/fortran.npy", code: 1, msg: `--grads \S*/fortran\.npy: Fortran-ordered arrays are not supported`},
	{name: "grads truncated data", args: "$RUN --grads $D/trunc.npy", code: 1, msg: `--grads \S*/trunc\.npy: truncated data: file holds 20 bytes of data, shape \(3, 4\) float32 needs 48`},
	{name: "grads truncated header", args: "$RUN --grads $D/header_only.npy", code: 1, msg: `--grads \S*/header_only\.npy: truncated header`},

	// Unwritable outputs.
	{name: "out in missing directory", args: "$RUN --out $D/nodir/out.npy", code: 1, msg: `^fibergen run: --out \S*/nodir/out\.npy: cannot write into directory \S*/nodir: no such file or directory`},
	{name: "out below a file", args: "$RUN --out $D/theta.npy/out.npy", code: 1, msg: `--out \S*/theta\.npy/out\.npy: \S*/theta\.npy is not a directory`},
	{name: "out is a directory", args: "$RUN --out $D/adir", code: 1, msg: `^fibergen run: --out \S*/adir is a directory; want a file name`},
	{name: "out is a FIFO", args: "$RUN --out $D/fifo.npy", code: 1, msg: `^fibergen run: --out \S*/fifo\.npy: it is a FIFO, not a regular file: fibergen replaces only regular files`},
	{name: "out is a device", args: "$RUN --out /dev/null", code: 1, msg: `^fibergen run: --out /dev/null: it is a device, not a regular file`},
	{name: "out is the grads", args: "$RUN --out $D/grads.npy", code: 1, msg: `^fibergen run: --out \S*/grads\.npy is the file of --grads: give each output a file of its own`},
	{name: "out is theta through a link", args: "$RUN --out $D/theta-link.npy", code: 1, msg: `--out \S*/theta-link\.npy is the file of --theta`},
	{name: "two outputs in one file", args: "run $D/dp_sgd.dsl --example-grads $D/examples.npy --clip 1 --theta $D/theta.npy --out $OUT --clipped-out $OUT --noise-multiplier 1", code: 1, msg: `--clipped-out \S+ is the file of --out`},
	{name: "build onto a FIFO", args: "build $D/fiber.dsl -o $D/fifodir", code: 1, msg: `^fibergen build: -o \S*/fifodir: cannot write \S*/fifodir/fiber/fiber\.go: it is a FIFO`},
	{name: "build into a file", args: "build $D/fiber.dsl -o $D/theta.npy", code: 1, msg: `^fibergen build: -o \S*/theta\.npy: \S*/theta\.npy is not a directory`},
	{name: "build onto a directory", args: "build $D/fiber.dsl -o $D/gendir", code: 1, msg: `^fibergen build: -o \S*/gendir: cannot write \S*/gendir/fiber/fiber\.go: it is a directory`},
	{name: "build into a dangling link", args: "build $D/fiber.dsl -o $D/dangling", code: 1, msg: `^fibergen build: -o \S*/dangling: cannot use \S*/dangling: no such file or directory`},
	{name: "run into a dangling link", args: "$RUN --out $D/dangling/out.npy", code: 1, msg: `^fibergen run: --out \S*/dangling/out\.npy: cannot write into directory \S*/dangling: no such file or directory`},
	{name: "run into a read-only directory", args: "$RUN --out $D/rodir/out.npy", code: 1, msg: `^fibergen run: --out \S*/rodir/out\.npy: cannot write: permission denied`, skipRoot: true},
	{name: "build into a read-only directory", args: "build $D/fiber.dsl -o $D/rodir", code: 1, msg: `^fibergen build: cannot write \S*/rodir/fiber: permission denied`, skipRoot: true},
	{name: "build partly blocked", args: "build $D/fiber.dsl $D/dp_sgd.dsl -o $D/blocked", code: 1, msg: `^fibergen build: -o \S*/blocked: \S*/blocked/dp_sgd is not a directory`},
}

func TestBadInput(t *testing.T) {
	dir := fixtureFiles(t)
	for _, c := range badCases {
		t.Run(c.name, func(t *testing.T) {
			if c.skipRoot && os.Geteuid() == 0 {
				t.Skip("root can read and write files whatever their modes")
			}
			out := filepath.Join(dir, "out")
			args := expandArgs(c.args, dir, out)
			t.Run("no output", func(t *testing.T) {
				checkBadRun(t, c, dir, args)
			})
			t.Run("old output", func(t *testing.T) {
				makeOldOutput(t, out, strings.HasPrefix(c.args, "build"))
				defer os.RemoveAll(out)
				checkBadRun(t, c, dir, args)
			})
		})
	}
}

// expandArgs splits a case's command line and fills in its paths. $RUN's
// flags that the case gives again are left out of $RUN: a flag given twice
// is an error of its own.
func expandArgs(line, dir, out string) []string {
	if rest, ok := strings.CutPrefix(line, "$RUN"); ok {
		line = withoutFlags(runLine, strings.Fields(rest)) + rest
	}
	args := strings.Fields(line)
	for i, a := range args {
		a = strings.ReplaceAll(a, "$D", dir)
		args[i] = strings.ReplaceAll(a, "$OUT", out)
	}
	return args
}

// withoutFlags drops from line each "--flag value" pair whose flag is in args.
func withoutFlags(line string, args []string) string {
	f := strings.Fields(line)
	var keep []string
	for i := 0; i < len(f); i++ {
		if strings.HasPrefix(f[i], "--") && slices.Contains(args, f[i]) {
			i++ // and its value
			continue
		}
		keep = append(keep, f[i])
	}
	return strings.Join(keep, " ")
}

// makeOldOutput puts what an earlier successful command would have left
// at out: a .npy file for run, generated packages for build.
func makeOldOutput(t *testing.T, out string, build bool) {
	t.Helper()
	if !build {
		writeNPY(t, filepath.Dir(out), filepath.Base(out), []int{2}, []float32{7, 8})
		return
	}
	for _, name := range shipped {
		if err := os.MkdirAll(filepath.Join(out, name), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(out, name), name+".go", []byte("package "+name+" // old\n"))
	}
}

// checkBadRun runs a bad command line and checks the exit status, the
// messages and that no file under dir was created, changed or removed.
func checkBadRun(t *testing.T, c badCase, dir string, args []string) {
	t.Helper()
	before := snapshot(t, dir)
	r := runMain(args...)
	if r.code != c.code {
		t.Errorf("exit status %d, want %d; stderr:\n%s", r.code, c.code, r.stderr)
	}
	if c.stdout == "" && r.stdout != "" || c.stdout != "" && !regexp.MustCompile(c.stdout).MatchString(r.stdout) {
		t.Errorf("stdout does not match %q:\n%s", c.stdout, r.stdout)
	}
	if c.dsl {
		checkDiagnostics(t, r.stderr)
	} else {
		checkOneLine(t, r.stderr)
	}
	if !regexp.MustCompile(c.msg).MatchString(r.stderr) {
		t.Errorf("stderr %q does not match %q", r.stderr, c.msg)
	}
	checkSnapshot(t, dir, before)
}

// checkOneLine checks that stderr is one line from fibergen.
func checkOneLine(t *testing.T, stderr string) {
	t.Helper()
	line, ok := strings.CutSuffix(stderr, "\n")
	if !ok || line == "" || strings.ContainsAny(line, "\n\r") || !strings.HasPrefix(line, "fibergen") {
		t.Errorf("stderr is not one line starting with fibergen: %q", stderr)
	}
}

// diagnostic matches the three lines of one DSL error: the position and
// message, the source line, and a caret under the column.
var diagnostic = regexp.MustCompile(`^[^\s:]+:(\d+):(\d+): \S[^\n]*\n\t([^\n]*)\n\t([\t ]*)\^\n`)

// checkDiagnostics checks that stderr is a sequence of DSL diagnostics,
// each with its source line and a caret under the reported column.
func checkDiagnostics(t *testing.T, stderr string) {
	t.Helper()
	if stderr == "" {
		t.Fatal("no diagnostics")
	}
	for rest := stderr; rest != ""; {
		m := diagnostic.FindStringSubmatch(rest)
		if m == nil {
			t.Fatalf("not a diagnostic with source line and caret:\n%s", rest)
		}
		col := len(m[4]) + 1
		if m[2] != strconv.Itoa(col) {
			t.Errorf("caret at column %d, diagnostic says %s:\n%s", col, m[2], m[0])
		}
		if strings.TrimSpace(m[3]) != "" && len(m[3]) < col-1 {
			t.Errorf("caret past the end of the source line:\n%s", m[0])
		}
		rest = rest[len(m[0]):]
	}
}

// TestAllowUnstable: --allow-unstable runs what it would otherwise refuse.
func TestAllowUnstable(t *testing.T) {
	dir := fixtureFiles(t)
	args := expandArgs("run $D/rho.dsl --grads $D/grads.npy --theta $D/theta.npy --out $OUT --noise off --set rho=1.2 --allow-unstable", dir, filepath.Join(dir, "out"))
	var out, errb bytes.Buffer
	if code := Main(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if code := Main([]string{"explain", filepath.Join(dir, "rho.dsl"), "--set", "rho=1.2", "--allow-unstable"}, &out, &errb); code != 0 {
		t.Errorf("explain: exit %d: %s", code, errb.String())
	}
}
