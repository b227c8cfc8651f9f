package hostisa

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/cpu"
)

// TestDecode reads features from CPUID registers: a bit set without the
// register state the OS saves is not a feature.
func TestDecode(t *testing.T) {
	const ecx1 = 1<<0 | 1<<9 | 1<<19 | 1<<20 | 1<<12 | 1<<28 | 1<<29 | osxsave
	const ebx7 = 1<<5 | 1<<16 | 1<<17 | 1<<30 | 1<<31
	all := [4]uint32{ecx: ecx1}
	for _, c := range []struct {
		name string
		r    registers
		want []string
	}{
		{"everything", registers{all, [4]uint32{ebx: ebx7}, zmmState}, avx512Features},
		{"no zmm state", registers{all, [4]uint32{ebx: ebx7}, ymmState}, append(avx2Features[:6:6], "fma", "f16c")},
		{"no ymm state", registers{all, [4]uint32{ebx: ebx7}, 1}, []string{"sse3", "ssse3", "sse4.1", "sse4.2"}},
		{"no leaf 7", registers{leaf1: all, xcr0: zmmState}, []string{"sse3", "ssse3", "sse4.1", "sse4.2", "avx", "fma", "f16c"}},
		{"nothing", registers{}, nil},
	} {
		got := c.r.features().Sorted()
		want := NewFeatures(c.want...).Sorted()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestHostAgrees holds this CPU's features, as Host reads them, to
// golang.org/x/sys/cpu's and to the flags of /proc/cpuinfo.
func TestHostAgrees(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("CPUID is x86's")
	}
	x := cpu.X86
	sys := map[string]bool{"sse3": x.HasSSE3, "ssse3": x.HasSSSE3, "sse4.1": x.HasSSE41, "sse4.2": x.HasSSE42,
		"fma": x.HasFMA, "avx": x.HasAVX, "avx2": x.HasAVX2, "avx512f": x.HasAVX512F, "avx512dq": x.HasAVX512DQ,
		"avx512bw": x.HasAVX512BW, "avx512vl": x.HasAVX512VL}
	host := Host()
	for f, has := range sys {
		if host[f] != has {
			t.Errorf("%s: Host says %v, golang.org/x/sys/cpu %v", f, host[f], has)
		}
	}
	flags := cpuinfoFlags(t)
	for f := range cpuidBits {
		if name := linuxFlag(f); flags != nil && host[f] != flags[name] {
			t.Errorf("%s: Host says %v, /proc/cpuinfo's flag %s %v", f, host[f], name, flags[name])
		}
	}
}

// cpuinfoFlags are the flags of the first processor of /proc/cpuinfo; nil
// where there is none.
func cpuinfoFlags(t *testing.T) map[string]bool {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Logf("no /proc/cpuinfo: %v", err)
		return nil
	}
	for _, line := range strings.Split(string(info), "\n") {
		if strings.HasPrefix(line, "flags") {
			return NewFeatures(strings.Fields(line)...)
		}
	}
	return nil
}

// linuxFlag is the name of LLVM's feature f among Linux's cpuinfo flags.
func linuxFlag(f string) string {
	switch f {
	case "sse3":
		return "pni"
	case "sse4.1", "sse4.2":
		return strings.Replace(f, ".", "_", 1)
	}
	return f
}
