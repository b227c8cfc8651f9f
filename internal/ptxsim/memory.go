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

// allocation is one block of memory and, per word (markBytes bytes: the
// smallest access the kernels make, a bfloat16's), what the current
// launch did with it: the launch's number when it was last read through
// the non-coherent path (.nc), and who wrote and who read it (the launch's
// number in the high 32 bits, a thread in the low ones).
type allocation struct {
	base   uint64
	data   []byte
	ncRead []uint32
	wrote  []uint64
	read   []uint64
}

// markBytes is the bytes of a word whose accesses an allocation tracks.
const markBytes = 2

// The low 32 bits of a word's wrote and read marks: a thread's id, with
// atomicBit for atomics, or several.
const (
	atomicBit = 1 << 31
	several   = atomicBit - 1
)

// accessKind is what a thread's access does.
type accessKind int

const (
	load   accessKind = iota
	loadNC            // ld.global.nc
	store
	atomic // atom.global: read and written, by any thread
)

// maxAlloc is the largest allocation: 16 GiB.
const maxAlloc = 1 << 34

// allocAlign is the alignment of every allocation, as cuMemAlloc's.
const allocAlign = 256

// NewMemory returns an empty memory.
func NewMemory() *Memory { return &Memory{next: 1 << 40} }

// Alloc returns the address of n new zeroed bytes, 256-byte aligned.
func (m *Memory) Alloc(n int) (uint64, error) {
	if n <= 0 || n > maxAlloc {
		return 0, fmt.Errorf("ptxsim: allocation of %d bytes", n)
	}
	words := (n + markBytes - 1) / markBytes
	a := &allocation{base: m.next, data: make([]byte, n),
		ncRead: make([]uint32, words), wrote: make([]uint64, words), read: make([]uint64, words)}
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

// Copy copies n bytes from src to dst, both device addresses.
func (m *Memory) Copy(dst, src uint64, n int) error {
	if n == 0 {
		return nil
	}
	from, off, err := m.find(src, n)
	if err != nil {
		return fmt.Errorf("ptxsim: copy: %w", err)
	}
	return m.Write(dst, from.data[off:off+n])
}

// Set32 stores count copies of the 32-bit word v from addr.
func (m *Memory) Set32(addr uint64, v uint32, count int) error {
	if count == 0 {
		return nil
	}
	if addr%4 != 0 || count < 0 || count > maxAlloc/4 {
		return fmt.Errorf("ptxsim: memset of %d words at %#x", count, addr)
	}
	a, off, err := m.find(addr, 4*count)
	if err != nil {
		return fmt.Errorf("ptxsim: memset: %w", err)
	}
	for i := range count {
		binary.LittleEndian.PutUint32(a.data[off+4*i:], v)
	}
	return nil
}

// access is one load or store of a thread: it checks that [addr, addr+n)
// is inside an allocation and aligned to align, and keeps the rules of a
// launch for each word.
func (m *Memory) access(l *launch, addr uint64, n, align int, k accessKind) []byte {
	if addr%uint64(align) != 0 {
		l.fault("misaligned %d-byte access at %#x (needs %d-byte alignment)", n, addr, align)
	}
	a, off, err := m.find(addr, n)
	if err != nil {
		l.fault("%v", err)
	}
	for w := off / markBytes; w < (off+n+markBytes-1)/markBytes; w++ {
		if msg := a.use(w, l.epoch, l.cur.id, k); msg != "" {
			l.fault("%s (%#x)", msg, a.base+uint64(markBytes*w))
		}
	}
	return a.data[off : off+n]
}

// use records access k to word w by thread me in launch epoch, or says
// which rule it breaks: no store to a word read through .nc and no .nc
// read of a word written; no word written by one thread and touched by
// another, or read by one and written by another (a race), atomics
// excepted among themselves.
func (a *allocation) use(w int, epoch, me uint32, k accessKind) string {
	writes := k == store || k == atomic
	wrote, read := a.mark(a.wrote[w], epoch), a.mark(a.read[w], epoch)
	if k == atomic {
		me |= atomicBit
	}
	switch {
	case writes && a.ncRead[w] == epoch:
		return "a store to a word this launch read through the non-coherent cache (ld.global.nc)"
	case k == loadNC && wrote != 0:
		return "ld.global.nc of a word this launch wrote"
	case wrote != 0 && wrote&^atomicBit != me&^atomicBit && (k != atomic || wrote&atomicBit == 0):
		return fmt.Sprintf("a race: thread %s accesses a word %s", who(me), whoWrote(wrote))
	case writes && read != 0 && read != me&^atomicBit:
		return fmt.Sprintf("a race: thread %s writes a word thread %s read in this launch", who(me), who(read))
	}
	switch {
	case writes && wrote != 0 && wrote&^atomicBit != me&^atomicBit:
		a.wrote[w] = uint64(epoch)<<32 | atomicBit | several
	case writes:
		a.wrote[w] = uint64(epoch)<<32 | uint64(me)
	case k == loadNC:
		a.ncRead[w] = epoch
	case read != 0 && read != me:
		a.read[w] = uint64(epoch)<<32 | several // no thread's id: a write by any is a race
	default:
		a.read[w] = uint64(epoch)<<32 | uint64(me)
	}
	return ""
}

// mark returns the thread part of a word's mark if it is of launch epoch,
// else 0.
func (a *allocation) mark(m uint64, epoch uint32) uint32 {
	if uint32(m>>32) != epoch {
		return 0
	}
	return uint32(m)
}

// who names the thread of id by its index in the launch.
func who(id uint32) string {
	if id&^atomicBit == several {
		return "(several threads)"
	}
	return fmt.Sprint(id&^atomicBit - 1)
}

func whoWrote(id uint32) string {
	if id&atomicBit != 0 {
		return "that thread " + who(id) + " updated atomically in this launch"
	}
	return "that thread " + who(id) + " wrote in this launch"
}
