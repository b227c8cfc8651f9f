package ptxsim

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// Memory is a simulated device's global memory: allocations at fixed
// addresses, each followed by a gap no allocation uses, so that an access
// past an allocation's end is out of bounds rather than in its neighbour.
// Addresses start high enough (2^40) that no test address is confused with
// a small integer.
type Memory struct {
	allocs []*allocation // sorted by base
	next   uint64
	// last is the allocation of the last access, tried first.
	last *allocation
	// epoch numbers the launches, for the rules of access.
	epoch uint32
}

// allocation is one block of memory and, per 4-byte word, what the current
// launch did with it: the launch's number when it was last read through
// the non-coherent path (.nc), and when and by which thread it was last
// written.
type allocation struct {
	base    uint64
	data    []byte
	ncRead  []uint32
	written []uint32
	writer  []uint32
}

// accessKind is what a thread's access does.
type accessKind int

const (
	load   accessKind = iota
	loadNC            // ld.global.nc
	store
	atomic // atom.global: read and written, by any thread
)

// allocAlign is the alignment of every allocation, as cuMemAlloc's.
const allocAlign = 256

// NewMemory returns an empty memory.
func NewMemory() *Memory { return &Memory{next: 1 << 40} }

// Alloc returns the address of n new zeroed bytes, 256-byte aligned.
func (m *Memory) Alloc(n int) (uint64, error) {
	if n <= 0 || n > 1<<34 {
		return 0, fmt.Errorf("ptxsim: allocation of %d bytes", n)
	}
	words := (n + 3) / 4
	a := &allocation{base: m.next, data: make([]byte, n),
		ncRead: make([]uint32, words), written: make([]uint32, words), writer: make([]uint32, words)}
	m.next += (uint64(n) + 2*allocAlign - 1) / allocAlign * allocAlign
	m.allocs = append(m.allocs, a)
	return a.base, nil
}

// Allocated returns the bytes of the live allocations.
func (m *Memory) Allocated() int64 {
	var n int64
	for _, a := range m.allocs {
		n += int64(len(a.data))
	}
	return n
}

// Free releases the allocation at addr, which must be an address Alloc
// returned.
func (m *Memory) Free(addr uint64) error {
	for i, a := range m.allocs {
		if a.base == addr {
			m.allocs = append(m.allocs[:i], m.allocs[i+1:]...)
			m.last = nil
			return nil
		}
	}
	return fmt.Errorf("ptxsim: free of %#x, which is not an allocation's address", addr)
}

// find returns the allocation holding [addr, addr+n) and the offset of addr
// in it, or an error.
func (m *Memory) find(addr uint64, n int) (*allocation, int, error) {
	if a := m.last; a != nil && a.holds(addr, n) {
		return a, int(addr - a.base), nil
	}
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].base > addr }) - 1
	if i >= 0 {
		a := m.allocs[i]
		if a.holds(addr, n) {
			m.last = a
			return a, int(addr - a.base), nil
		}
		if addr-a.base < uint64(len(a.data)) {
			return nil, 0, fmt.Errorf("%d bytes at %#x run past the end of the %d-byte allocation at %#x", n, addr, len(a.data), a.base)
		}
	}
	return nil, 0, fmt.Errorf("%d bytes at %#x are outside every allocation", n, addr)
}

// holds reports whether [addr, addr+n) lies in a.
func (a *allocation) holds(addr uint64, n int) bool {
	size := uint64(len(a.data))
	return addr >= a.base && addr-a.base < size && uint64(n) <= size-(addr-a.base)
}

// Write copies b to addr, from the host.
func (m *Memory) Write(addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	a, off, err := m.find(addr, len(b))
	if err != nil {
		return fmt.Errorf("ptxsim: write: %w", err)
	}
	copy(a.data[off:], b)
	return nil
}

// Read copies len(b) bytes at addr into b, to the host.
func (m *Memory) Read(addr uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	a, off, err := m.find(addr, len(b))
	if err != nil {
		return fmt.Errorf("ptxsim: read: %w", err)
	}
	copy(b, a.data[off:])
	return nil
}

// Set32 stores count copies of the 32-bit word v from addr.
func (m *Memory) Set32(addr uint64, v uint32, count int) error {
	if count == 0 {
		return nil
	}
	a, off, err := m.find(addr, 4*count)
	if err != nil || addr%4 != 0 {
		return fmt.Errorf("ptxsim: memset of %d words at %#x: %v", count, addr, err)
	}
	for i := range count {
		binary.LittleEndian.PutUint32(a.data[off+4*i:], v)
	}
	return nil
}

// access is one load or store of a thread: it checks that [addr, addr+n)
// is inside an allocation and aligned to align, and keeps the rules of a
// launch: no memory both read through .nc and written, and no word
// written by one thread and read or written by another.
func (m *Memory) access(l *launch, addr uint64, n, align int, k accessKind) []byte {
	if addr%uint64(align) != 0 {
		l.fault("misaligned %d-byte access at %#x (needs %d-byte alignment)", n, addr, align)
	}
	a, off, err := m.find(addr, n)
	if err != nil {
		l.fault("%v", err)
	}
	me := l.cur.id
	if k == atomic {
		me = 0 // shared by every thread's atomics
	}
	writes, nc := k == store || k == atomic, k == loadNC
	for w := off / 4; w < (off+n+3)/4; w++ {
		switch {
		case writes && a.ncRead[w] == l.epoch:
			l.fault("store to %#x, which this launch read through the non-coherent cache (ld.global.nc)", a.base+uint64(4*w))
		case nc && a.written[w] == l.epoch:
			l.fault("ld.global.nc of %#x, which this launch wrote", a.base+uint64(4*w))
		case a.written[w] == l.epoch && a.writer[w] != me:
			l.fault("thread %d accesses %#x, which thread %d wrote in this launch (a race)", me, a.base+uint64(4*w), a.writer[w])
		}
		if writes {
			a.written[w], a.writer[w] = l.epoch, me
		} else if nc {
			a.ncRead[w] = l.epoch
		}
	}
	return a.data[off : off+n]
}
