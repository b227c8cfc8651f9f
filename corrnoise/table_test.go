package corrnoise

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/table.md (every n; takes a minute)")

// tablePath is the golden of docs/correlated-noise.md's table.
var tablePath = filepath.Join("testdata", "table.md")

// tableHeader heads the table.
const tableHeader = `| n | b | k | d | buffers | max loss | DP-SGD max | ratio | mean loss | DP-SGD mean | ratio | reference |
|---|---|---|---|---|---|---|---|---|---|---|---|
`

// tableRow designs for both objectives and renders one row.
func tableRow(n, b, d int) (string, error) {
	mx, err := Design(n, b, d, Max)
	if err != nil {
		return "", err
	}
	mean, err := Design(n, b, d, Mean)
	if err != nil {
		return "", err
	}
	mx.CompareDense()
	mean.CompareDense()
	return fmt.Sprintf("| %d | %d | %d | %d | %d/%d | %.6g | %.6g | %.5g | %.6g | %.6g | %.5g | %s |\n",
		n, b, mx.Participations, d, mx.Buffers, mean.Buffers, mx.Loss.Max(), mx.DPSGD.Max(), mx.Ratio(),
		mean.Loss.Mean(), mean.DPSGD.Mean(), mean.Ratio(), reference(n, b, mx, mean)), nil
}

// reference is the row's comparison: under one participation, the square
// root factorization's max loss; where computed, the optimal dense
// factorizations' max and mean losses (under several participations,
// fixed epochs).
func reference(n, b int, mx, mean Mechanism) string {
	var parts []string
	if b == n {
		f := sqrtCoefficients(n)
		inv, _ := Inverse(f)
		l, _ := Evaluate(f, inv, n, n)
		parts = append(parts, fmt.Sprintf("sqrt max %.6g, mean %.6g", l.Max(), l.Mean()))
	}
	if mx.Dense != nil {
		parts = append(parts, fmt.Sprintf("dense max %.6g", mx.Dense.MaxLoss))
	}
	if mean.Dense != nil {
		parts = append(parts, fmt.Sprintf("dense mean %.6g", mean.Dense.MeanLoss))
	}
	if parts == nil {
		return "–"
	}
	return strings.Join(parts, "; ")
}

// tableSettings are the rows: n ∈ {100, 1000, 10000}, b ∈ {1, n/10, n},
// d ∈ 1…4.
func tableSettings(maxN int) [][3]int {
	var rows [][3]int
	for _, n := range []int{100, 1000, 10000} {
		for _, b := range []int{1, n / 10, n} {
			for d := 1; d <= 4; d++ {
				if n <= maxN {
					rows = append(rows, [3]int{n, b, d})
				}
			}
		}
	}
	return rows
}

// The table's rows for n ≤ 1000 are recomputed and held to the golden to
// 1e-4 (a machine that fuses multiply-adds may differ in the last
// digits); go test ./corrnoise -run Table -update rewrites every row.
func TestTable(t *testing.T) {
	maxN := 1000
	if *update {
		maxN = 10000
	}
	var b strings.Builder
	b.WriteString(tableHeader)
	for _, s := range tableSettings(maxN) {
		row, err := tableRow(s[0], s[1], s[2])
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		b.WriteString(row)
	}
	if *update {
		if err := os.WriteFile(tablePath, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	compareTable(t, b.String())
}

// compareTable holds each computed row to the golden row of its setting.
func compareTable(t *testing.T, got string) {
	t.Helper()
	data, err := os.ReadFile(tablePath)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		want[rowKey(line)] = line
	}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n")[2:] {
		w, ok := want[rowKey(line)]
		if !ok || !rowsAgree(line, w, 1e-4) {
			t.Errorf("row\n%s\nagainst the golden\n%s", line, w)
		}
	}
}

// rowKey is a row's n, b and d.
func rowKey(line string) string {
	f := strings.Split(line, "|")
	if len(f) < 5 {
		return ""
	}
	return strings.Join(f[1:5], "|")
}

// rowsAgree compares two rows cell by cell, numbers to rel.
func rowsAgree(a, b string, rel float64) bool {
	fa, fb := strings.Fields(a), strings.Fields(b)
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		x, errX := strconv.ParseFloat(strings.Trim(fa[i], ",;"), 64)
		y, errY := strconv.ParseFloat(strings.Trim(fb[i], ",;"), 64)
		if errX != nil || errY != nil {
			if fa[i] != fb[i] {
				return false
			}
			continue
		}
		if !near(x, y, rel) {
			return false
		}
	}
	return true
}
