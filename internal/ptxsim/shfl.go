package ptxsim

// shuffle is a compiled shfl.sync.MODE.b32 d, a, b, c, membermask.
type shuffle struct {
	mode            string // up, down, bfly, idx
	d, a, b, c, msk int32
}

// exchange completes the shfl.sync every live lane of a warp waits at:
// every lane its member mask names must exist, wait at a shfl.sync of the
// same mode with the same mask, and, when it is the lane read from, be
// in the mask. Each lane then gets the value its source lane offered, as
// the PTX ISA defines the source for each mode, and goes on.
func (l *launch) exchange(lanes []*thread) {
	var got [32]uint64
	for i, t := range lanes {
		if t.state != waiting {
			continue
		}
		l.cur = t
		s := l.k.code[t.pc].shfl
		mask := uint32(t.r[s.msk])
		if mask&(1<<t.r[12]) == 0 {
			l.fault("shfl.sync on lane %d, which its member mask %#x leaves out", t.r[12], mask)
		}
		for j := range 32 {
			if mask&(1<<j) == 0 {
				continue
			}
			if j >= len(lanes) {
				l.fault("shfl.sync names lane %d in its member mask %#x, but the warp has %d threads", j, mask, len(lanes))
			}
			u := lanes[j]
			if u.state != waiting {
				l.fault("shfl.sync names lane %d in its member mask %#x, but lane %d has exited", j, mask, j)
			}
			if us := l.k.code[u.pc].shfl; us.mode != s.mode || uint32(u.r[us.msk]) != mask {
				l.fault("lanes %d and %d meet at shfl.sync with different modes or masks", t.r[12], j)
			}
		}
		src := sourceLane(s.mode, uint32(t.r[12]), uint32(t.r[s.b]), uint32(t.r[s.c]))
		if mask&(1<<src) == 0 {
			l.fault("shfl.sync reads lane %d, which is not in the member mask %#x", src, mask)
		}
		got[i] = lanes[src].shflValue
	}
	for i, t := range lanes {
		if t.state == waiting {
			t.r[l.k.code[t.pc].shfl.d] = got[i]
			t.state = running
			t.pc++
		}
	}
}

// sourceLane is the lane a shfl.sync of the given mode reads on lane, with
// operands b and c (c packs the clamp value in bits 0-4 and the segment
// mask in bits 8-12), as the PTX ISA defines it; out of range, a lane reads
// its own value.
func sourceLane(mode string, lane, b, c uint32) uint32 {
	bval, cval, seg := b&31, c&31, c>>8&31
	maxLane := lane&seg | cval&^seg
	minLane := lane & seg
	var j uint32
	var ok bool
	switch mode {
	case "up":
		j = lane - bval
		ok = int32(j) >= int32(maxLane)
	case "down":
		j = lane + bval
		ok = j <= maxLane
	case "bfly":
		j = lane ^ bval
		ok = j <= maxLane
	case "idx":
		j = minLane | bval&^seg
		ok = j <= maxLane
	}
	if !ok {
		return lane
	}
	return j
}
