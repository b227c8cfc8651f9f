package npy_test

import (
	"bytes"
	"fmt"

	"github.com/fibergen/fibergen/runtime/npy"
)

func Example() {
	var buf bytes.Buffer
	a := npy.Array{Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}}
	if err := npy.Write(&buf, a); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes: %d header + 24 data\n", buf.Len(), buf.Len()-24)

	b, err := npy.Read(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(b.Shape, b.Rank(), b.Data)
	// Output:
	// 152 bytes: 128 header + 24 data
	// [2 3] 2 [1 2 3 4 5 6]
}
