package runtime_test

import (
	"fmt"
	"log"
	"math"

	"github.com/fibergen/fibergen/runtime"
)

// A trainer opens the optimizer that fibergen build wrote, registers its
// parameter tensors once, sets the DP settings and then, every iteration,
// hands over the clipped mean gradient of its batch and steps: the kernel
// adds the Gaussian noise itself. A trainer that clips by itself says so
// for each batch (TrustClippedGradient); one that gives the per-example
// gradients to Privatize needs not.
func ExampleOptimizer() {
	// The CPU backend, on every core: the host kernel fibergen build made
	// (fiber.so), or here, where it may not have, the reference.
	opt, err := runtime.Open("../generated/fiber", runtime.Options{GoFallback: true})
	if err != nil {
		log.Fatal(err)
	}
	defer opt.Close()
	weight, _ := opt.Register("weight", []float32{0.5, -0.25, 1, 0})
	bias, _ := opt.Register("bias", []float32{0})
	if err := opt.SetHyper("lr", 0.01); err != nil {
		log.Fatal(err)
	}
	if err := opt.SetDP(runtime.DP{ClipNorm: 1, NoiseMultiplier: 1.1, BatchSize: 256}); err != nil {
		log.Fatal(err)
	}
	opt.SetSeed(42) // reproducible noise; by default the seed is random
	for range 3 {
		weight.SetGrad([]float32{0.1, 0.2, -0.1, 0}) // the batch's clipped mean gradient
		bias.SetGrad([]float32{0.05})
		opt.TrustClippedGradient() // the trainer clipped and averaged them itself
		if err := opt.Step(); err != nil {
			log.Fatal(err)
		}
	}
	w, _ := weight.Params()
	fmt.Println(opt.Steps(), len(w), opt.Len())
	// Output: 3 4 5
}

// A binding that owns the memory (a PyTorch tensor's storage, through the
// C ABI) hands the optimizer its buffers — theta, g, then the states, in
// the manifest's order — and steps them in place.
func ExampleOptimizer_UseBuffers() {
	opt, err := runtime.Open("../generated/dp_sgd", runtime.Options{GoFallback: true})
	if err != nil {
		log.Fatal(err)
	}
	defer opt.Close()
	theta, grad := []float32{1, 2, 3, 4}, make([]float32, 4)
	bufs := [][]float32{theta, grad}
	for range opt.Manifest().Buffers[2:] {
		bufs = append(bufs, make([]float32, 4))
	}
	if err := opt.UseBuffers(bufs); err != nil { // sets the states to their initial values
		log.Fatal(err)
	}
	opt.SetHyper("lr", 0.5)
	opt.SetNoise(runtime.Noise{SigmaW2: 0}) // no noise, for a printable result
	copy(grad, []float32{1, 1, 1, 1})
	opt.GradientWritten() // the runtime does not see the trainer's writes
	if err := opt.Step(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(theta)
	fmt.Println(opt.Step()) // the same gradient again
	grad[2] = float32(math.Inf(1))
	opt.GradientWritten()
	fmt.Println(opt.Step())
	// Output:
	// [0.5 1.5 2.5 3.5]
	// runtime: Step: no gradient for buffer g since the last step (step 1 is next): privatize the next batch (Privatize) or set it, for each step, since a step on the same gradient releases the same batch again, which the privacy accounting does not count
	// runtime: gradient of g[2] is +Inf: step skipped, nothing changed
}

// Per-layer clipping: each example's weight and bias are clipped to norms
// of their own, and the noise of the bias, whose norm is smaller, is
// smaller in proportion; σ_DP is one mechanism's either way.
func ExampleDP_groups() {
	opt, err := runtime.Open("../generated/dp_sgd", runtime.Options{GoFallback: true})
	if err != nil {
		log.Fatal(err)
	}
	defer opt.Close()
	opt.Register("weight", []float32{0.5, -0.25, 1, 0})
	opt.Register("bias", []float32{0})
	dp := runtime.DP{Groups: []runtime.ClipGroup{{Size: 4, ClipNorm: 1}, {Size: 1, ClipNorm: 0.25}},
		NoiseMultiplier: 1, BatchSize: 2, ProportionalNoise: true}
	if err := opt.SetDP(dp); err != nil {
		log.Fatal(err)
	}
	st, err := opt.Privatize([]float32{3, 0, 4, 0, 1, 0.1, 0, 0, 0, 0}, nil) // two examples
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("scales, group by group:", st.Scales, "clipped:", st.Clipped)
	fmt.Printf("sensitivity %.4f, noise std of the bias %.4f of the weight %.4f\n",
		dp.Sensitivity(), math.Sqrt(dp.GroupSigmaW2(1)), math.Sqrt(dp.GroupSigmaW2(0)))
	// Output:
	// scales, group by group: [0.2 1 0.25 1] clipped: 1
	// sensitivity 1.0308, noise std of the bias 0.1768 of the weight 0.7071
}
