package runtime

import "errors"

// newCUDABackend starts the CUDA backend.
func newCUDABackend(o *Optimizer) (backend, error) {
	return nil, errors.New("runtime: the CUDA backend is not built yet")
}
