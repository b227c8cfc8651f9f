package runtime

// Checkpoints.
//
// Save writes, and Load reads, everything a run needs to go on bit for bit:
// the parameters, every state buffer, the step counter, the noise seed, the
// hypers, the DP settings, the global Offset and the tensor layout, under
// the optimizer's name and manifest hash. The gradient buffer is not saved:
// it is an input, set with Tensor.SetGrad before every step.
//
// The file, format version 1, byte by byte (integers little-endian):
//
//	offset      size  content
//	0           20    magic "fibergen-checkpoint\n"
//	20          4     format version, uint32: 1
//	24          4     H, the header's length in bytes, uint32
//	28          8     D, the data's length in bytes, uint64: 4·(n·len(buffers) + L)
//	36          4     CRC-32C (Castagnoli) of bytes [0, 36), uint32
//	40          H     header: one JSON object (checkpointHeader), UTF-8
//	40+H        D     data: each buffer of the header's "buffers" in order,
//	                  n float32 values each (IEEE 754 bits, little-endian),
//	                  then the L float32 values of the line states of "lines"
//	40+H+D      32    SHA-256 of bytes [0, 40+H+D)
//
// and nothing after. The preamble's CRC makes the lengths trustworthy before
// they are used, so that a file shorter than they say is reported as
// truncated and any changed byte as corrupted (or, in the magic and the
// version, as not a checkpoint and as another version). The header holds:
//
//	"optimizer"        the optimizer's name, e.g. "fiber"
//	"manifest_sha256"  manifest.Hash of the <name>.json it was opened from
//	"step"             steps taken: the next step is this one
//	"seed"             the noise seed (uint64); 0 in secure mode, which has none
//	"noise_mode"       "secure" for a run in secure noise mode (Options.SecureNoise),
//	                   which holds no key: the resumed run derives its own (Load);
//	                   absent (or "philox") for the default mode, as before secure mode
//	"offset"           Options.Offset, the global index of coordinate 0
//	"hypers"           {"name": value, ...}: every hyper, by name
//	"dp"               {"clip_norm", "noise_multiplier", "batch_size"}, or absent
//	"noise"            {"sigma_w2", "draw"} where SetNoise set the noise, or absent
//	"budget"           {"epsilon", "delta", "clip_norm", "dataset_size", "batch_size",
//	                   "epochs", "sampling", "accounting", "series", "orders", "sigma"}
//	                   where SetBudget set one, or absent: the resumed run keeps its
//	                   accounting ("accounting" absent: rdp, as before PLD)
//	"n"                coordinates per buffer
//	"tensors"          [{"name", "offset", "len"}, ...] in registration order, with
//	                   "shape" (Tensor.Shape) for an optimizer that reads rows and columns
//	"buffers"          the buffers of the data in order: "theta", then the
//	                   states in the manifest's order
//	"states"           {"n", "sha256"} where the trainer owns the buffers and
//	                   saved its states beside the checkpoint (SaveTo with
//	                   states): their length and the SHA-256 of their float32
//	                   bytes, little-endian, in the manifest's order; or absent
//	"line_states"      [{"name", "axis"}, ...]: an optimizer's states per row ("rows") or
//	                   per column ("cols"), in the manifest's order; absent without any
//	"lines"            [{"offset", "len", "rows", "cols"}, ...]: the tensors whose line
//	                   states the data holds (those that have stepped), by offset; each
//	                   entry's line states follow one another, rows or cols values each
//
// Save writes to a temporary file in the target's directory (mode 0600: a
// checkpoint holds the seed; a secure one holds neither seed nor key, and
// keeps the mode), syncs it, renames it over the target and syncs
// the directory, so the path always holds either the old file or the whole
// new one. Load reads the whole file and checks all of it — integrity,
// version, optimizer, build, offset, layout, hypers, DP settings — before it
// changes anything.

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/fibergen/fibergen/internal/fileout"
	"github.com/fibergen/fibergen/ir"
	"github.com/fibergen/fibergen/privacy"
	"github.com/fibergen/fibergen/rng"
	"github.com/fibergen/fibergen/runtime/backend"
)

const (
	checkpointMagic   = "fibergen-checkpoint\n"
	checkpointVersion = 1
	preambleLen       = 40 // magic, version, H, D, CRC
	sumLen            = sha256.Size
	maxCheckpointStep = 1 << 32 // steps 0 to 2^32-1 draw noise; a run can end at 2^32
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The kinds of Load errors, for errors.Is. Every Load error reads
// "runtime: load <path>: <what>" on one line.
var (
	// ErrNotCheckpoint: the file does not start with the checkpoint magic.
	ErrNotCheckpoint = errors.New("not a fibergen checkpoint")
	// ErrCheckpointVersion: a checkpoint of another format version.
	ErrCheckpointVersion = errors.New("checkpoint format version not supported")
	// ErrCheckpointTruncated: the file ends before the lengths it records.
	ErrCheckpointTruncated = errors.New("checkpoint truncated")
	// ErrCheckpointCorrupted: a checksum does not match, or the file goes on
	// after the checkpoint's end.
	ErrCheckpointCorrupted = errors.New("checkpoint corrupted")
	// ErrCheckpointMismatch: an intact checkpoint of another optimizer, of
	// another build of it, of another shard or of another tensor layout.
	ErrCheckpointMismatch = errors.New("checkpoint does not match the optimizer")
	// ErrStepped: Load into an optimizer that has taken steps.
	ErrStepped = errors.New("optimizer has taken steps")
	// ErrResumed: a checkpoint resumed before (see Options.AllowResumeAgain).
	ErrResumed = errors.New("checkpoint resumed before")
)

// checkpointHeader is the JSON header.
type checkpointHeader struct {
	Optimizer      string `json:"optimizer"`
	ManifestSHA256 string `json:"manifest_sha256"`
	Step           int64  `json:"step"`
	Seed           uint64 `json:"seed"`
	// NoiseMode is "secure" for a run in secure mode; "" (or "philox") the
	// default mode: a philox checkpoint reads as before secure mode, to
	// every fibergen.
	NoiseMode string             `json:"noise_mode,omitempty"`
	Offset    uint64             `json:"offset"`
	Hypers    map[string]float64 `json:"hypers"`
	DP        *checkpointDP      `json:"dp,omitempty"`
	Noise     *Noise             `json:"noise,omitempty"`
	Budget    *checkpointBudget  `json:"budget,omitempty"`
	N         int64              `json:"n"`
	Tensors   []checkpointTensor `json:"tensors"`
	Buffers   []string           `json:"buffers"`
	// HypersSet names the derived hypers set by the trainer, which no
	// longer follow the hypers they read (ir.Func.Derive).
	HypersSet []string `json:"hypers_set,omitempty"`
	// TensorHypers are the tensors' own hypers (Tensor.SetHypers), by name.
	TensorHypers map[string]map[string]float64 `json:"tensor_hypers,omitempty"`
	// States is the digest of the trainer's states saved beside the
	// checkpoint (SaveTo with states).
	States *checkpointStates `json:"states,omitempty"`
	// LineStates and Lines are an optimizer's with line states
	// (checkpoint_lines.go): their names and axes, and the tensors whose
	// line states the data holds after the buffers.
	LineStates []LineState       `json:"line_states,omitempty"`
	Lines      []checkpointLines `json:"lines,omitempty"`
}

// checkpointStates is the digest of the states of an optimizer on the
// trainer's buffers, which the trainer saves beside the checkpoint.
type checkpointStates struct {
	N      int64  `json:"n"`
	SHA256 string `json:"sha256"`
}

type checkpointDP struct {
	ClipNorm        float64 `json:"clip_norm"`
	NoiseMultiplier float64 `json:"noise_multiplier"`
	BatchSize       int     `json:"batch_size"`
	// Groups and ProportionalNoise are DP's (absent: one clipping norm).
	Groups            []ClipGroup `json:"clip_groups,omitempty"`
	ProportionalNoise bool        `json:"proportional_noise,omitempty"`
}

// checkpointBudget is a privacy budget (Budget) as a checkpoint holds it.
type checkpointBudget struct {
	Epsilon     float64   `json:"epsilon"`
	Delta       float64   `json:"delta"`
	ClipNorm    float64   `json:"clip_norm"`
	DatasetSize int       `json:"dataset_size"`
	BatchSize   int       `json:"batch_size"`
	Epochs      float64   `json:"epochs"`
	Sampling    string    `json:"sampling"`
	Accounting  string    `json:"accounting,omitempty"` // absent: rdp, from before PLD
	Series      string    `json:"series"`
	Orders      []float64 `json:"orders,omitempty"`
	Sigma       float64   `json:"sigma"` // the calibrated σ_DP
	// Groups and ProportionalNoise are the budget's (absent: one norm).
	Groups            []ClipGroup `json:"clip_groups,omitempty"`
	ProportionalNoise bool        `json:"proportional_noise,omitempty"`
}

func newCheckpointBudget(b *Budget) *checkpointBudget {
	s := b.Schedule
	return &checkpointBudget{Epsilon: b.Epsilon, Delta: s.Delta, ClipNorm: b.ClipNorm, DatasetSize: s.DatasetSize,
		BatchSize: s.BatchSize, Epochs: s.Epochs, Sampling: s.Sampling.String(), Accounting: s.Accounting.String(),
		Series: s.Series.String(), Orders: s.Orders, Sigma: b.sigma, Groups: b.Groups, ProportionalNoise: b.ProportionalNoise}
}

// epsilonSlack is the relative excess of the ε a checkpoint's σ spends
// over its budget's ε that Load accepts: the accountant's log-space sums
// may differ in their last bits from the machine that calibrated σ (math.Exp
// takes an FMA path where the CPU has one), and a resume must not fail for
// that; a σ from another budget is off by far more.
const epsilonSlack = 1e-9

// budget rebuilds the budget the checkpoint holds from its σ and the
// strategy of its schedule, checking that σ spends at most the budget's ε
// over the schedule.
func (c *checkpointBudget) budget(strategy func(privacy.Schedule) ([]float64, error)) (*Budget, DP, error) {
	sampling, err := privacy.ParseSampling(c.Sampling)
	if err != nil {
		return nil, DP{}, err
	}
	series, err := privacy.ParseSeries(c.Series)
	if err != nil {
		return nil, DP{}, err
	}
	accounting, err := privacy.ParseAccounting(c.accounting())
	if err != nil {
		return nil, DP{}, err
	}
	b := &Budget{Epsilon: c.Epsilon, Delta: c.Delta, ClipNorm: c.ClipNorm, Schedule: privacy.Schedule{DatasetSize: c.DatasetSize,
		BatchSize: c.BatchSize, Epochs: c.Epochs, Delta: c.Delta, Sampling: sampling, Accounting: accounting, Series: series,
		Orders: c.Orders}, Groups: c.Groups, ProportionalNoise: c.ProportionalNoise}
	if b.Schedule.Strategy, err = strategy(b.Schedule); err != nil {
		return nil, DP{}, err
	}
	dp, err := b.withSigma(c.Sigma)
	if err != nil {
		return nil, DP{}, err
	}
	if g := b.accountant.EpsilonAfter(b.Schedule.Steps()); !(g.Epsilon <= c.Epsilon*(1+epsilonSlack)) {
		return nil, DP{}, fmt.Errorf("σ_DP = %v spends ε = %v over the schedule, more than the budget's %v", c.Sigma, g.Epsilon, c.Epsilon)
	}
	return b, dp, nil
}

// accounting is the budget's accounting method: rdp for a checkpoint
// written before the PLD accountant.
func (c *checkpointBudget) accounting() string {
	return cmp.Or(c.Accounting, privacy.RDP.String())
}

// differences lists the settings in which the checkpoint budget c is not
// the optimizer's d, each as "name c's (checkpoint), d's (optimizer)",
// named as the binding's set_budget names them where it does; none where
// they are one budget.
func (c *checkpointBudget) differences(d *checkpointBudget) []string {
	var out []string
	diff := func(name string, a, b any) {
		if as, bs := fmt.Sprint(a), fmt.Sprint(b); as != bs {
			out = append(out, fmt.Sprintf("%s %s (checkpoint), %s (optimizer)", name, as, bs))
		}
	}
	delta := func(v float64) any {
		if v == 0 {
			return "1/N^1.1 (the default)"
		}
		return v
	}
	diff("epsilon", c.Epsilon, d.Epsilon)
	diff("delta", delta(c.Delta), delta(d.Delta))
	diff("clip", c.ClipNorm, d.ClipNorm)
	diff("dataset_size", c.DatasetSize, d.DatasetSize)
	diff("batch_size", c.BatchSize, d.BatchSize)
	diff("epochs", c.Epochs, d.Epochs)
	diff("sampling", c.Sampling, d.Sampling)
	diff("accountant", c.accounting(), d.accounting())
	diff("series", c.Series, d.Series)
	diff("orders", c.Orders, d.Orders)
	diff("clip groups", c.Groups, d.Groups)
	diff("proportional_noise", c.ProportionalNoise, d.ProportionalNoise)
	diff("sigma (calibrated)", c.Sigma, d.Sigma)
	return out
}

func (d *checkpointDP) dp() DP { return DP(*d) }

type checkpointTensor struct {
	Name   string `json:"name"`
	Offset int64  `json:"offset"`
	Len    int64  `json:"len"`
	// Shape is the tensor's (Tensor.Shape), recorded for an optimizer that
	// reads rows and columns only, whose steps it changes.
	Shape []int `json:"shape,omitempty"`
}

func (t checkpointTensor) String() string {
	if t.Shape != nil {
		return fmt.Sprintf("%s[%d:%d) of shape %v", t.Name, t.Offset, t.Offset+t.Len, t.Shape)
	}
	return fmt.Sprintf("%s[%d:%d)", t.Name, t.Offset, t.Offset+t.Len)
}

// equal reports whether t and u are the same tensor.
func (t checkpointTensor) equal(u checkpointTensor) bool {
	return t.Name == u.Name && t.Offset == u.Offset && t.Len == u.Len && slices.Equal(t.Shape, u.Shape)
}

// checkpointBuffers names the saved buffers: theta, then the states.
func (o *Optimizer) checkpointBuffers() []string {
	return append([]string{ir.ThetaName}, o.prog.Func.States...)
}

// bufIndex maps a saved buffer — theta, then the states: a checkpoint
// holds no gradient — to its index in o.bufs (the ABI order, ir/abi.go).
func bufIndex(k int) int {
	if k == 0 {
		return ir.ThetaBuffer
	}
	return ir.FirstState + k - 1
}

// savedN is the number of coordinates a checkpoint holds: none where the
// trainer owns the buffers (UseBuffers, StepDevice, ranges of them) and
// checkpoints them itself.
func (o *Optimizer) savedN() int {
	if o.trainerBuffers() || o.hasRanges() {
		return 0
	}
	return o.n
}

func (o *Optimizer) layout() []checkpointTensor {
	out := make([]checkpointTensor, len(o.tensors))
	for i, t := range o.tensors {
		out[i] = checkpointTensor{Name: t.Name, Offset: int64(t.Offset), Len: int64(t.Len)}
		if o.prog.Func.HasLines() {
			out[i].Shape = t.dims()
		}
	}
	return out
}

// Save writes a checkpoint of the optimizer to path atomically: to a
// temporary file in the same directory, synced, then renamed over path
// (through a symbolic link, over its target; only a regular file is
// replaced), and the directory synced. On error the file at path, if any,
// is as it was and no temporary file is left. The file is created with mode 0600:
// it holds the noise seed, from which anyone can recompute every step's
// noise and so undo the privacy of the released parameters; keep it as
// private as the training data (a secure-mode checkpoint holds no seed
// and no key, only the mode). Save changes nothing in the optimizer;
// it may be called before the first step, and must not run concurrently
// with Step.
func (o *Optimizer) Save(path string) error {
	defer o.lock()()
	write := func(w io.Writer) error { return o.writeCheckpoint(w, nil) }
	if err := fileout.Write(path, 0o600, write); err != nil {
		return fmt.Errorf("runtime: save %s: %w", path, err)
	}
	return nil
}

// SaveTo writes a checkpoint of the optimizer to w, in the format Save
// writes (see Save for what it holds and why it must be kept private).
//
// An optimizer on the trainer's buffers (UseBuffers, StepDevice) leaves
// them to the trainer to save; given states — the trainer's copy of the
// optimizer's states, in the order of Manifest().Buffers[ir.FirstState:], which it
// saves beside the checkpoint — the checkpoint holds their SHA-256, and
// LoadFrom then resumes only with those very states.
func (o *Optimizer) SaveTo(w io.Writer, states ...[]float32) error {
	defer o.lock()()
	if err := o.writeCheckpoint(w, states); err != nil {
		return fmt.Errorf("runtime: save: %w", err)
	}
	return nil
}

// writeCheckpoint streams the checkpoint to w, encoding the buffers in
// chunks so that it needs little memory besides them; states are the
// trainer's (SaveTo).
func (o *Optimizer) writeCheckpoint(w io.Writer, states [][]float32) error {
	digest, err := o.statesDigest(states)
	if err != nil {
		return err
	}
	bufs, err := o.snapshot()
	if err != nil {
		return err
	}
	h := checkpointHeader{
		Optimizer:      o.Name(),
		ManifestSHA256: o.hash,
		Step:           int64(o.t),
		Seed:           o.seed,
		Offset:         o.opts.Offset,
		N:              int64(o.savedN()),
		Tensors:        o.layout(),
		Buffers:        o.checkpointBuffers(),
		States:         digest,
		LineStates:     o.LineStates(),
	}
	var lines [][][]float32
	h.Lines, lines = o.linesHeader()
	nLines, err := linesValues(&h, math.MaxInt64/4)
	if err != nil {
		return err
	}
	if o.mode == rng.Secure {
		h.NoiseMode = rng.Secure.String() // and no key: a resumed run derives its own
	}
	o.headerHypers(&h)
	if o.dp != nil {
		d := checkpointDP(*o.dp)
		h.DP = &d
	}
	h.Noise = o.noise
	if o.budget != nil {
		h.Budget = newCheckpointBudget(o.budget)
	}
	header, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if uint64(len(header)) > math.MaxUint32 {
		return fmt.Errorf("the header has %d bytes, more than a checkpoint holds", len(header))
	}
	pre := make([]byte, preambleLen)
	copy(pre, checkpointMagic)
	binary.LittleEndian.PutUint32(pre[20:], checkpointVersion)
	binary.LittleEndian.PutUint32(pre[24:], uint32(len(header)))
	binary.LittleEndian.PutUint64(pre[28:], 4*(uint64(h.N)*uint64(len(h.Buffers))+uint64(nLines)))
	binary.LittleEndian.PutUint32(pre[36:], crc32.Checksum(pre[:36], castagnoli))

	sum := sha256.New()
	bw := bufio.NewWriterSize(w, 1<<20)
	out := io.MultiWriter(bw, sum)
	if _, err := out.Write(pre); err != nil {
		return err
	}
	if _, err := out.Write(header); err != nil {
		return err
	}
	raw := make([]byte, floatChunk)
	for k := range h.Buffers {
		if err := writeFloats(out, bufs[bufIndex(k)][:h.N], raw); err != nil {
			return err
		}
	}
	if err := writeLines(out, lines, raw); err != nil {
		return err
	}
	if _, err := bw.Write(sum.Sum(nil)); err != nil {
		return err
	}
	return bw.Flush()
}

// snapshot returns the current buffers (ABI order) without changing
// anything in the optimizer: the host buffers, brought up to date by the
// backend's sync once it runs (a device backend copies its buffers back),
// or, before any buffer exists, the registered parameters and the states'
// initial values.
func (o *Optimizer) snapshot() ([][]float32, error) {
	if o.back != nil {
		if err := o.back.Sync(); err != nil {
			return nil, err
		}
	}
	bufs := o.bufs
	if bufs == nil {
		bufs = o.newHostBuffers(o.savedN())
		if o.savedN() > 0 {
			o.placeParams(bufs[ir.ThetaBuffer])
			if err := o.initStates(bufs[ir.FirstState:]); err != nil {
				return nil, err
			}
		}
	}
	out := make([][]float32, len(bufs))
	for i, b := range bufs {
		if o.savedN() > 0 { // the trainer's buffers are not saved: nothing to widen
			out[i] = b.Widen() // a 16-bit state's values as float32s, exactly
		}
	}
	return out, nil
}

// Load restores the optimizer from a checkpoint that Save wrote: the
// parameters, the states, the step counter, the seed, the hypers and the DP
// settings (where the checkpoint has them), so that the steps that follow
// are bit for bit those of the run that saved it, on any backend. The
// optimizer must have been opened from the same generated files (the
// manifest hash), with the same Offset, and have the same tensors
// registered (names, offsets, lengths, in order). It reads and checks the
// whole file first: if anything is wrong — truncated, corrupted, another
// version, optimizer, build, shard or layout — it returns an error that
// says which (errors.Is with ErrCheckpointTruncated and the others) and
// changes nothing.
//
// Load refuses an optimizer that has taken a step. The noise of step t is
// a function of the seed, t and the coordinate alone, so an optimizer
// rolled back to an earlier step would draw again the noise it has already
// drawn, on other gradients: two releases with the same noise, which the
// privacy accounting does not cover. The use Load is for is resuming a
// run that stopped (a crash, a preemption) from its last checkpoint, in a
// fresh optimizer: the stopped run's steps after the checkpoint are
// discarded and were never released. For the same reason a checkpoint is
// resumed once, and not while the run that wrote it goes on: Load and
// LoadFrom record each resume by the checkpoint's identity in the resume
// record (resume.go, ResumeRecordDir) and refuse a checkpoint resumed
// before, wherever its bytes lie (ErrResumed; Options.AllowResumeAgain
// overrides).
//
// A checkpoint resumes only in the noise mode it was saved in (philox, or
// secure: Options.SecureNoise), and a secure one holds no key: Load then
// sets the key to rng.DeriveKey(key, n), n counting this optimizer's
// loads, so that the resumed run's noise is not the stopped run's (which
// is secure mode's "bit for bit": the parameters and states are, the noise
// is new) and ranks that agreed on a key (SetKey) derive the same one.
//
// Load reads only a regular file, and no more than a checkpoint of this
// optimizer can hold.
func (o *Optimizer) Load(path string) error {
	defer o.lock()()
	if err := o.checkFresh(path); err != nil {
		return err
	}
	data, err := o.readCheckpointFile(path)
	if err != nil {
		return err
	}
	return o.load(path, data, nil)
}

// readCheckpointFile reads the checkpoint file at path: a regular file (a
// FIFO would block, /dev/zero never end), at most as long as a checkpoint
// of the optimizer can be.
func (o *Optimizer) readCheckpointFile(path string) ([]byte, error) {
	fail := func(err error) error { return fmt.Errorf("runtime: load %s: %w", path, fileout.RootCause(err)) }
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fail(err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return nil, fail(err)
	case !st.Mode().IsRegular():
		return nil, fail(fmt.Errorf("not a regular file (%v): a checkpoint is one", st.Mode().Type()))
	case st.Size() > o.maxCheckpointLen():
		return nil, &loadError{path, ErrCheckpointMismatch, fmt.Sprintf("%d bytes, more than any checkpoint of this optimizer holds (%d)",
			st.Size(), o.maxCheckpointLen())}
	}
	data, err := io.ReadAll(io.LimitReader(f, o.maxCheckpointLen()+1))
	if err != nil {
		return nil, fail(err)
	}
	return data, nil
}

// Room in a checkpoint's header, for maxCheckpointLen: a base for the
// fixed fields, the optimizer's hypers and the budget, far above what they
// take; per JSON entry (a tensor's layout, one of its hypers) its
// punctuation and numbers; per byte of a name, its JSON escape at most.
const (
	headerBase = 1 << 20
	entryJSON  = 96
	jsonEscape = 6
)

// maxCheckpointLen bounds the bytes a checkpoint of the optimizer holds:
// its buffers, and a header with room for every tensor's name, layout and
// hypers.
func (o *Optimizer) maxCheckpointLen() int64 {
	perTensor := int64(entryJSON)
	for _, h := range o.prog.Func.Hypers {
		perTensor += entryJSON + jsonEscape*int64(len(h.Name))
	}
	if o.prog.Func.HasLines() {
		perTensor += 2 * entryJSON // its shape, and its entry in "lines"
	}
	header := int64(headerBase)
	for _, t := range o.tensors {
		header += perTensor + jsonEscape*int64(len(t.Name))
	}
	lines := int64(len(o.prog.Func.LineStates)) * int64(o.n) // a line state holds no more values than its tensor, saved on the trainer's buffers too
	return preambleLen + header + 4*int64(o.savedN())*int64(len(o.checkpointBuffers())) + 4*lines + sumLen
}

// LoadFrom restores the optimizer from a checkpoint read from r, as Load
// does from a file; it reads exactly the checkpoint's bytes from r. An
// optimizer on the trainer's buffers whose checkpoint holds the digest of
// the trainer's states (SaveTo with states) resumes only given those very
// states, which it checks and does not copy: the trainer restores them.
func (o *Optimizer) LoadFrom(r io.Reader, states ...[]float32) error {
	defer o.lock()()
	data, err := o.readFrom(r)
	if err != nil {
		return err
	}
	return o.load(streamName, data, states)
}

// CheckCheckpoint returns the error LoadFrom would return for the
// checkpoint read from r (and the states), or nil, and changes nothing: a
// trainer restoring several optimizers as one (a binding's parameter
// groups) checks every checkpoint before it loads any.
func (o *Optimizer) CheckCheckpoint(r io.Reader, states ...[]float32) error {
	defer o.lock()()
	data, err := o.readFrom(r)
	if err != nil {
		return err
	}
	if _, err = o.verify(streamName, data, states); err != nil {
		return err
	}
	return o.checkResumed(streamName, data)
}

// CheckpointInfo is what an intact checkpoint says of the run that saved
// it, and whether it was resumed before.
type CheckpointInfo struct {
	Optimizer      string `json:"optimizer"`
	ManifestSHA256 string `json:"manifest_sha256"`
	Step           int64  `json:"step"`
	Seed           uint64 `json:"seed"`
	// NoiseMode is the run's noise mode, "philox" or "secure" (which has no
	// seed, 0 above).
	NoiseMode string `json:"noise_mode"`
	Offset    uint64 `json:"offset"`
	// StatesDigest says that the checkpoint holds the digest of the
	// trainer's states (SaveTo with states), which LoadFrom checks.
	StatesDigest bool `json:"states_digest"`
	// Resumed is the resume record of the checkpoint (when, where and by
	// which process it was resumed), "" where it was not resumed before.
	Resumed string `json:"resumed"`
}

// CheckpointInfo reads a checkpoint from r, checks its integrity (not that
// it matches the optimizer: CheckCheckpoint does) and returns what it
// says: for a trainer restoring several optimizers as one, which checks
// that their checkpoints are of one run, at one step.
func (o *Optimizer) CheckpointInfo(r io.Reader) (CheckpointInfo, error) {
	defer o.lock()()
	data, err := readCheckpoint(r, o.maxCheckpointLen())
	if err != nil {
		return CheckpointInfo{}, fmt.Errorf("runtime: load %s: %w", streamName, err)
	}
	c, lerr := decode(data)
	if lerr != nil {
		lerr.path = streamName
		return CheckpointInfo{}, lerr
	}
	h := c.h
	info := CheckpointInfo{Optimizer: h.Optimizer, ManifestSHA256: h.ManifestSHA256, Step: h.Step, Seed: h.Seed,
		NoiseMode: h.noiseMode(), Offset: h.Offset, StatesDigest: h.States != nil}
	if _, note, found, err := o.resumeRecord(data); err == nil && found {
		info.Resumed = cmp.Or(note, "resumed")
	}
	return info, nil
}

// verify decodes the checkpoint data, read from path, and checks it
// against the optimizer and the trainer's states.
func (o *Optimizer) verify(path string, data []byte, states [][]float32) (*checkpoint, error) {
	c, lerr := decode(data)
	if lerr == nil {
		lerr = o.match(c)
	}
	if lerr == nil {
		lerr = o.matchStates(&c.h, states)
	}
	if lerr != nil {
		lerr.path = path
		return nil, lerr
	}
	return c, nil
}

// streamName names a checkpoint read from an io.Reader in errors.
const streamName = "checkpoint"

// readFrom reads a checkpoint from r for an optimizer that may load it.
func (o *Optimizer) readFrom(r io.Reader) ([]byte, error) {
	if err := o.checkFresh(streamName); err != nil {
		return nil, err
	}
	data, err := readCheckpoint(r, o.maxCheckpointLen())
	if err != nil {
		return nil, fmt.Errorf("runtime: load %s: %w", streamName, err)
	}
	return data, nil
}

func (o *Optimizer) checkFresh(path string) error {
	if o.t > 0 {
		return &loadError{path, ErrStepped, fmt.Sprintf("the optimizer has stepped (Steps() = %d); load checkpoints only into a freshly opened optimizer, "+
			"since one rolled back would draw the noise of its past steps again", o.t)}
	}
	return nil
}

// readCheckpoint reads the preamble and then as many bytes as it says
// follow, at most limit in all; decode judges what came.
func readCheckpoint(r io.Reader, limit int64) ([]byte, error) {
	pre := make([]byte, preambleLen)
	k, err := io.ReadFull(r, pre)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	pre = pre[:k]
	total, lerr := preambleTotal(pre)
	if lerr != nil {
		return pre, nil
	}
	if total > uint64(limit) {
		return nil, fmt.Errorf("its preamble announces %d bytes, more than any checkpoint of this optimizer holds (%d)", total, limit)
	}
	rest, err := io.ReadAll(io.LimitReader(r, int64(total)-preambleLen))
	if err != nil {
		return nil, err
	}
	return append(pre, rest...), nil
}

// loadError is a Load error of one kind.
type loadError struct {
	path string
	kind error
	msg  string
}

func (e *loadError) Error() string { return "runtime: load " + e.path + ": " + e.msg }
func (e *loadError) Unwrap() error { return e.kind }

// checkpoint is a decoded, checked checkpoint.
type checkpoint struct {
	h      checkpointHeader
	bufs   [][]float32   // in h.Buffers order
	lines  [][][]float32 // the line states of h.Lines' entries
	budget *Budget       // h.Budget, calibrated by match
}

// preambleTotal checks the preamble and returns the file's total length.
func preambleTotal(data []byte) (uint64, *loadError) {
	short := func() *loadError {
		return &loadError{kind: ErrCheckpointTruncated, msg: fmt.Sprintf("truncated: %d bytes, shorter than the %d-byte preamble", len(data), preambleLen)}
	}
	n := min(len(data), len(checkpointMagic))
	if string(data[:n]) != checkpointMagic[:n] {
		return 0, &loadError{kind: ErrNotCheckpoint, msg: fmt.Sprintf("not a fibergen checkpoint (it starts %q, not %q)", data[:n], checkpointMagic)}
	}
	if len(data) < 24 {
		return 0, short()
	}
	if v := binary.LittleEndian.Uint32(data[20:]); v != checkpointVersion {
		return 0, &loadError{kind: ErrCheckpointVersion, msg: fmt.Sprintf("checkpoint format version %d, this fibergen reads %d", v, checkpointVersion)}
	}
	if len(data) < preambleLen {
		return 0, short()
	}
	if got, want := binary.LittleEndian.Uint32(data[36:]), crc32.Checksum(data[:36], castagnoli); got != want {
		return 0, &loadError{kind: ErrCheckpointCorrupted, msg: fmt.Sprintf("corrupted: the preamble's CRC-32C is %08x, its bytes give %08x", got, want)}
	}
	hl, dl := uint64(binary.LittleEndian.Uint32(data[24:])), binary.LittleEndian.Uint64(data[28:])
	if dl > 1<<60 {
		return 0, &loadError{kind: ErrCheckpointCorrupted, msg: fmt.Sprintf("corrupted: a data length of %d bytes", dl)}
	}
	return preambleLen + hl + dl + sumLen, nil
}

// decode checks the file's integrity and decodes it; it does not look at
// the optimizer.
func decode(data []byte) (*checkpoint, *loadError) {
	total, err := preambleTotal(data)
	if err != nil {
		return nil, err
	}
	corrupted := func(format string, args ...any) *loadError {
		return &loadError{kind: ErrCheckpointCorrupted, msg: "corrupted: " + fmt.Sprintf(format, args...)}
	}
	switch size := uint64(len(data)); {
	case size < total:
		return nil, &loadError{kind: ErrCheckpointTruncated, msg: fmt.Sprintf("truncated: %d bytes of the %d its preamble announces", size, total)}
	case size > total:
		return nil, corrupted("%d bytes after the checkpoint's end (%d bytes)", size-total, total)
	}
	body := data[:total-sumLen]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[total-sumLen:]) {
		return nil, corrupted("the SHA-256 of its contents does not match the one it records")
	}
	hl := int(binary.LittleEndian.Uint32(data[24:]))
	raw := body[preambleLen+hl:]
	var c checkpoint
	dec := json.NewDecoder(bytes.NewReader(body[preambleLen : preambleLen+hl]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c.h); err != nil {
		return nil, corrupted("malformed header: %v", err)
	}
	if dec.More() {
		return nil, corrupted("malformed header: data after the JSON object")
	}
	h := &c.h
	if h.N < 0 || h.N > int64(len(raw)) {
		return nil, corrupted("the header's %d buffers of %d values do not make the %d bytes of data", len(h.Buffers), h.N, len(raw))
	}
	nLines, lerr := linesValues(h, max(int64(len(raw))/4-h.N*int64(len(h.Buffers)), 0))
	if lerr != nil {
		return nil, corrupted("%v", lerr)
	}
	if uint64(len(raw)) != 4*(uint64(h.N)*uint64(len(h.Buffers))+uint64(nLines)) {
		return nil, corrupted("the header's %d buffers of %d values and %d values of line states do not make the %d bytes of data", len(h.Buffers), h.N, nLines, len(raw))
	}
	if h.Step < 0 || h.Step > maxCheckpointStep {
		return nil, corrupted("step %d is out of the range 0 to 2^32", h.Step)
	}
	if h.Step > 0 && h.DP == nil && h.Noise == nil {
		return nil, corrupted("step %d without DP settings or noise", h.Step)
	}
	c.bufs = make([][]float32, len(h.Buffers))
	for k := range c.bufs {
		b := newBuffer[float32](bufIndex(k), int(h.N)) // may become the optimizer's own (restoreBuffers)
		for i := range b {
			b[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		raw = raw[4*h.N:]
		c.bufs[k] = b
	}
	c.lines = decodeLines(h, raw)
	return &c, nil
}

// load restores the checkpoint data, read from path, once it is verified
// (against the trainer's states, for an optimizer on its buffers) and its
// resume recorded; a restore that fails takes the record back.
func (o *Optimizer) load(path string, data []byte, states [][]float32) (err error) {
	c, err := o.verify(path, data, states)
	if err != nil {
		return err
	}
	undo, err := o.claimResume(path, data)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			undo()
		}
	}()
	h := &c.h
	hypers := make([]float64, len(o.prog.Func.Hypers))
	for i, hy := range o.prog.Func.Hypers {
		hypers[i] = h.Hypers[hy.Name]
	}
	if o.savedN() > 0 {
		if err := o.restoreBuffers(c.bufs); err != nil {
			return fmt.Errorf("runtime: load %s: %w", path, err)
		}
	}
	o.restoreLines(h, c.lines)
	o.t, o.fault = int(h.Step), nil
	if o.watch != nil {
		o.watch.samples = nil // the samples were of another run's steps
	}
	o.seed = h.Seed // 0 in secure mode
	o.loads++
	if o.mode == rng.Secure {
		// The checkpoint holds no key: the resumed run draws under one derived
		// from this optimizer's, labelled by its loads, which never replays
		// noise drawn before and which ranks that agreed on a key derive
		// alike, with no communication.
		o.key = rng.DeriveKey(o.key, o.loads)
	}
	o.hypers, o.set = hypers, h.hypersSet()
	for _, t := range o.tensors {
		t.overrides, t.hypers = nil, nil
		if over := h.TensorHypers[t.Name]; len(over) > 0 {
			t.overrides = maps.Clone(over)
			t.hypers, _ = o.tensorHypers(hypers, o.set, over) // checked by match
		}
	}
	if h.DP != nil || h.Noise != nil { // the checkpoint's noise, the same as the optimizer's where it had any (matchOwnNoise)
		o.dp, o.noise = h.DP.ptr(), h.Noise
	}
	o.ghost = nil
	o.warnNoNoise()
	o.installBudget(c.budget, o.t)
	o.released() // a gradient set before the load is not the resumed run's
	return nil
}

// statesDigest returns the digest a checkpoint records of the trainer's
// states (SaveTo with states), nil for none given (or none to give).
func (o *Optimizer) statesDigest(states [][]float32) (*checkpointStates, error) {
	if len(states) == 0 {
		return nil, nil
	}
	if err := o.checkStates(states); err != nil {
		return nil, err
	}
	return &checkpointStates{N: int64(len(states[0])), SHA256: hashStates(states)}, nil
}

// checkStates checks the trainer's states given to SaveTo or LoadFrom: one
// per state, of one length — the optimizer's, on host buffers.
func (o *Optimizer) checkStates(states [][]float32) error {
	switch {
	case !o.trainerBuffers():
		return fmt.Errorf("runtime: %s keeps its states itself, in its checkpoints: give no states", o.Name())
	case len(states) != o.prog.NumStates():
		return fmt.Errorf("runtime: %d states given, %s has %d: %v", len(states), o.Name(), o.prog.NumStates(), o.prog.Func.States)
	}
	n := len(states[0])
	if (o.callerBuffers || o.hasRanges()) && n != o.n {
		return fmt.Errorf("runtime: states of %d values given, %s steps buffers of %d", n, o.Name(), o.n)
	}
	for i, st := range states {
		if len(st) != n {
			return fmt.Errorf("runtime: state %s holds %d values, %s %d", o.prog.Func.States[i], len(st), o.prog.Func.States[0], n)
		}
	}
	return nil
}

// hashStates is the hex SHA-256 of the states' float32 bytes,
// little-endian, in order.
func hashStates(states [][]float32) string {
	h := sha256.New()
	raw := make([]byte, floatChunk)
	for _, st := range states {
		writeFloats(h, st, raw) // a hash.Hash never fails to write
	}
	return hex.EncodeToString(h.Sum(nil))
}

// floatChunk is the bytes writeFloats encodes at a time.
const floatChunk = 4 << 16

// writeFloats writes vals to w as little-endian IEEE 754 bits, encoding a
// chunk at a time into raw (len(raw) a multiple of 4), so that a buffer
// needs no copy of its own size.
func writeFloats(w io.Writer, vals []float32, raw []byte) error {
	for len(vals) > 0 {
		n := min(len(vals), len(raw)/4)
		for i, v := range vals[:n] {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
		if _, err := w.Write(raw[:4*n]); err != nil {
			return err
		}
		vals = vals[n:]
	}
	return nil
}

// matchStates checks the trainer's states against the digest the
// checkpoint holds: a checkpoint with one resumes only with those states,
// one without only without states.
func (o *Optimizer) matchStates(h *checkpointHeader, states [][]float32) *loadError {
	switch {
	case h.States == nil && len(states) == 0:
		return nil
	case h.States == nil:
		return mismatch("the checkpoint holds no digest of the trainer's states, but states were given")
	case len(states) == 0:
		return mismatch("the checkpoint holds the digest of the trainer's states: give them, to be checked against it")
	}
	if err := o.checkStates(states); err != nil {
		return mismatch("%s", strings.TrimPrefix(err.Error(), "runtime: "))
	}
	if n := int64(len(states[0])); n != h.States.N {
		return mismatch("the checkpoint's states hold %d values each, those given %d", h.States.N, n)
	}
	if hashStates(states) != h.States.SHA256 {
		return &loadError{kind: ErrCheckpointCorrupted, msg: "corrupted: the states given are not those saved with the checkpoint " +
			"(their SHA-256 differs from the one it records): a state was changed or damaged"}
	}
	return nil
}

// match checks an intact checkpoint against the optimizer.
func (o *Optimizer) match(c *checkpoint) *loadError {
	h := &c.h
	if h.Optimizer != o.Name() {
		return mismatch("checkpoint of %s, this optimizer is %s", h.Optimizer, o.Name())
	}
	if h.ManifestSHA256 != o.hash {
		return mismatch("checkpoint made with another build of %s (manifest hash %s, this one's %s); rebuild or use the matching generated/ files",
			o.Name(), short(h.ManifestSHA256), short(o.hash))
	}
	if err := o.matchMode(h); err != nil {
		return err
	}
	if want := o.checkpointBuffers(); !slices.Equal(h.Buffers, want) {
		return mismatch("checkpoint holds the buffers %v, this optimizer %v", h.Buffers, want)
	}
	if h.Offset != o.opts.Offset {
		return mismatch("checkpoint of the shard at offset %d, this optimizer's offset is %d", h.Offset, o.opts.Offset)
	}
	if err := o.matchLayout(h); err != nil {
		return mismatch("%v", err)
	}
	if err := o.matchLines(h); err != nil {
		return err
	}
	hypers := make([]float64, len(o.prog.Func.Hypers))
	for i, hy := range o.prog.Func.Hypers {
		v, ok := h.Hypers[hy.Name]
		if !ok {
			return mismatch("checkpoint has no value for the hyper %s", hy.Name)
		}
		hypers[i] = v
	}
	if len(h.Hypers) != len(hypers) {
		var extra []string
		for name := range h.Hypers {
			if o.prog.Func.HyperIndex(name) < 0 {
				extra = append(extra, name)
			}
		}
		slices.Sort(extra)
		return mismatch("checkpoint has hypers that %s has not: %v", o.Name(), extra)
	}
	if err := o.prog.Check(hypers); err != nil {
		return mismatch("checkpoint's hypers: %v", err)
	}
	if err := o.matchTensorHypers(h, hypers); err != nil {
		return err
	}
	if err := o.matchNoise(h); err != nil {
		return err
	}
	return o.matchBudget(c, hypers)
}

// noiseMode is the checkpoint's noise mode's name: philox where the header
// names none (a checkpoint of the default mode, or from before secure mode).
func (h *checkpointHeader) noiseMode() string { return cmp.Or(h.NoiseMode, rng.Philox.String()) }

// matchMode checks the checkpoint's noise mode against the optimizer's: a
// run resumes in the mode it drew in, since a philox run resumed in secure
// mode would have released noise an adversary may recompute, and a secure
// run resumed in philox mode would draw its remaining noise from a seed.
func (o *Optimizer) matchMode(h *checkpointHeader) *loadError {
	mode, err := rng.ParseMode(h.noiseMode())
	if err != nil {
		return mismatch("checkpoint's noise mode %q is not one this fibergen knows (philox or secure)", h.NoiseMode)
	}
	if mode != o.mode {
		how := "open it without Options.SecureNoise"
		if mode == rng.Secure {
			how = "open it with Options.SecureNoise"
		}
		return mismatch("checkpoint of a run in %s noise mode, this optimizer draws in %s mode: a run resumes in the noise mode it drew in (%s)",
			mode, o.mode, how)
	}
	if mode == rng.Secure && h.Seed != 0 {
		return mismatch("checkpoint in secure noise mode with a seed (%d): a secure run has none", h.Seed)
	}
	return nil
}

// matchBudget calibrates the checkpoint's privacy budget and checks that
// its DP settings are the budget's; an optimizer with a budget takes only
// a checkpoint with one, since the steps of the other were not accounted.
func (o *Optimizer) matchBudget(c *checkpoint, hypers []float64) *loadError {
	h := &c.h
	if h.Budget == nil {
		if o.budget != nil {
			return mismatch("the optimizer has a privacy budget and the checkpoint none: the run's steps so far were not accounted for")
		}
		return nil
	}
	if o.budget != nil {
		if !o.prog.Func.SameNoise(o.hypers, hypers) { // first: another filter calibrates another σ
			return mismatch("checkpoint's noise filter is not the one the optimizer's privacy budget was calibrated for")
		}
		if diff := h.Budget.differences(newCheckpointBudget(o.budget)); diff != nil {
			return mismatch("checkpoint's privacy budget is not the optimizer's: %s", strings.Join(diff, "; "))
		}
		return o.keepBudget(c)
	}
	b, dp, err := h.Budget.budget(func(s privacy.Schedule) ([]float64, error) { return o.strategyFor(hypers, s) })
	if err != nil {
		return mismatch("checkpoint's privacy budget: %v", strings.TrimPrefix(err.Error(), "runtime: "))
	}
	if h.DP == nil || !h.DP.dp().equal(dp) {
		return mismatch("checkpoint's DP settings %+v are not those of its privacy budget, %+v", h.DP, dp)
	}
	c.budget = b
	return nil
}

// keepBudget keeps the optimizer's own budget for a checkpoint whose
// budget is the same, σ included: its table is a function of those
// settings alone, so the entries computed since SetBudget hold for the
// resumed run, and its σ was checked against its ε when it was set. The
// checkpoint's DP settings must still be the budget's.
func (o *Optimizer) keepBudget(c *checkpoint) *loadError {
	var own DP // the budget's: it sets the DP settings, and nothing else does while it holds
	if o.dp != nil {
		own = *o.dp
	}
	if c.h.DP == nil || !c.h.DP.dp().equal(own) {
		return mismatch("checkpoint's DP settings %+v are not those of its privacy budget, %+v", c.h.DP, own)
	}
	c.budget = o.budget
	return nil
}

func (o *Optimizer) matchLayout(h *checkpointHeader) error {
	have := o.layout()
	if h.N == int64(o.savedN()) && slices.EqualFunc(h.Tensors, have, checkpointTensor.equal) {
		return nil
	}
	msg := fmt.Sprintf("tensor layout differs: checkpoint has %d tensors over %d coordinates, this optimizer %d over %d",
		len(h.Tensors), h.N, len(have), o.savedN())
	for i := range max(len(h.Tensors), len(have)) {
		a, b := "none", "none"
		if i < len(h.Tensors) {
			a = h.Tensors[i].String()
		}
		if i < len(have) {
			b = have[i].String()
		}
		if a != b {
			return fmt.Errorf("%s; tensor %d is %s there, %s here", msg, i, a, b)
		}
	}
	return errors.New(msg)
}

// headerHypers records in h the hypers, the derived ones set and the
// tensors' own.
func (o *Optimizer) headerHypers(h *checkpointHeader) {
	h.Hypers = map[string]float64{}
	for i, hy := range o.prog.Func.Hypers {
		h.Hypers[hy.Name] = o.hypers[i]
	}
	for _, name := range o.prog.Func.DerivedHypers() {
		if o.set[name] {
			h.HypersSet = append(h.HypersSet, name)
		}
	}
	for _, t := range o.tensors {
		if t.overrides != nil {
			if h.TensorHypers == nil {
				h.TensorHypers = map[string]map[string]float64{}
			}
			h.TensorHypers[t.Name] = t.overrides
		}
	}
}

// matchTensorHypers checks the checkpoint's per-tensor hypers: each names
// a tensor, and the setting it makes with hypers and the checkpoint's set
// hypers passes the checks of Tensor.SetHypers.
func (o *Optimizer) matchTensorHypers(h *checkpointHeader, hypers []float64) *loadError {
	for _, name := range slices.Sorted(maps.Keys(h.TensorHypers)) {
		if !slices.ContainsFunc(o.tensors, func(t *Tensor) bool { return t.Name == name }) {
			return mismatch("checkpoint has hypers for a tensor %s that is not registered", name)
		}
		if _, err := o.tensorHypers(hypers, h.hypersSet(), h.TensorHypers[name]); err != nil {
			return mismatch("checkpoint's hypers of tensor %s: %v", name, err)
		}
	}
	return nil
}

// hypersSet is HypersSet as a set.
func (h *checkpointHeader) hypersSet() map[string]bool {
	set := map[string]bool{}
	for _, name := range h.HypersSet {
		set[name] = true
	}
	return set
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12] + "…"
	}
	return hash
}

// restoreBuffers puts the checkpoint's buffers (theta, states) in place:
// as the host buffers where the backend has not started, else through the
// backend, putting the old values back if a write fails.
func (o *Optimizer) restoreBuffers(bufs [][]float32) error {
	if err := o.checkStored(bufs); err != nil {
		return err
	}
	switch {
	case o.back == nil && o.bufs == nil:
		nb := make([]backend.Host, len(o.storages))
		nb[ir.GradBuffer] = backend.Float32s(newBuffer[float32](ir.GradBuffer, o.n))
		for k, h := range o.stored(bufs) {
			nb[bufIndex(k)] = h // the decoded buffer becomes the optimizer's own
		}
		o.bufs = nb
		for _, t := range o.tensors {
			t.init = nil
		}
		return nil
	case o.back == nil:
		for k, b := range bufs {
			o.bufs[bufIndex(k)].SetRounded(0, b) // checked: exact
		}
		return nil
	}
	old := make([][]float32, len(bufs))
	for k := range bufs {
		v, err := o.back.Read(bufIndex(k), 0, o.n)
		if err != nil {
			return err
		}
		old[k] = v
	}
	for k, b := range bufs {
		if err := o.back.Write(bufIndex(k), 0, b); err != nil {
			for j := range k {
				if rerr := o.back.Write(bufIndex(j), 0, old[j]); rerr != nil {
					return fmt.Errorf("%w; putting the old values back failed too (%w): the buffers are inconsistent", err, rerr)
				}
			}
			return fmt.Errorf("%w (nothing changed)", err)
		}
	}
	return nil
}

// checkStored refuses, before anything is changed, a checkpoint's value its
// buffer's storage does not hold: a 16-bit buffer's values are exactly its
// type's.
func (o *Optimizer) checkStored(bufs [][]float32) error {
	for k, b := range bufs {
		i := bufIndex(k)
		if err := backend.Holds(o.storages[i].DType, 0, b); err != nil {
			return fmt.Errorf("%w: state %s of the checkpoint (nothing changed)", err, o.bufName(i))
		}
	}
	return nil
}

// stored is the checkpoint's buffers (checkStored's) as the optimizer
// stores them: a 16-bit buffer's values narrowed (staggered as newBuffer
// staggers), the others as they are.
func (o *Optimizer) stored(bufs [][]float32) []backend.Host {
	out := make([]backend.Host, len(bufs))
	for k, b := range bufs {
		i := bufIndex(k)
		out[k] = backend.Float32s(b)
		if s := o.storages[i]; s.Narrow() {
			out[k] = backend.Host{DType: s.DType, U16: newBuffer[uint16](i, len(b))}
			out[k].SetRounded(0, b)
		}
	}
	return out
}

// matchNoise checks the checkpoint's DP settings or noise: valid, one of
// them, and no noise given directly where a privacy budget sets the noise
// from DP settings (the checkpoint would bypass it).
func (o *Optimizer) matchNoise(h *checkpointHeader) *loadError {
	if h.DP != nil {
		if err := h.DP.dp().check(); err != nil {
			return mismatch("checkpoint's %v", strings.TrimPrefix(err.Error(), "runtime: "))
		}
	}
	if err := o.matchOwnNoise(h); err != nil {
		return err
	}
	n := h.Noise
	switch {
	case n == nil:
		return nil
	case h.DP != nil:
		return mismatch("checkpoint has both DP settings %+v and noise %+v: want one of them", *h.DP, *n)
	case n.check() != nil:
		return mismatch("checkpoint's %v", strings.TrimPrefix(n.check().Error(), "runtime: "))
	case o.budget != nil:
		return mismatch("checkpoint gives the noise directly (SetNoise), but a privacy budget (SetBudget) sets it from DP settings")
	}
	return nil
}

// matchOwnNoise checks the checkpoint's DP settings or noise against
// those the optimizer was given before the load, if any: a load installs
// the checkpoint's, and silently replacing settings the trainer made (a
// larger σ_DP it accounts for, say) would release steps under others. A
// privacy budget's are matchBudget's.
func (o *Optimizer) matchOwnNoise(h *checkpointHeader) *loadError {
	if o.budget != nil || o.dp == nil && o.noise == nil || h.DP == nil && h.Noise == nil {
		return nil // a checkpoint of no settings keeps the optimizer's (load)
	}
	theirs := h.DP.ptr()
	if o.dp != nil && theirs != nil && o.dp.equal(*theirs) || o.noise != nil && h.Noise != nil && *o.noise == *h.Noise {
		return nil
	}
	own, other := noiseString(o.dp, o.noise), noiseString(theirs, h.Noise)
	return mismatch("checkpoint's noise (%s) is not the one this optimizer was given before the load (%s): a load does not replace "+
		"the noise settings made before it; load first and make them after, to change them", other, own)
}

// ptr is d as DP settings, nil for none.
func (d *checkpointDP) ptr() *DP {
	if d == nil {
		return nil
	}
	return new(d.dp())
}

// noiseString describes the noise of DP settings d or a noise n given
// directly (at most one set).
func noiseString(d *DP, n *Noise) string {
	switch {
	case d != nil:
		return "DP settings " + d.String()
	case n != nil && n.Draw:
		return fmt.Sprintf("σ_w² = %v, drawn", n.SigmaW2)
	case n != nil:
		return fmt.Sprintf("σ_w² = %v, the gradients privatized by the trainer", n.SigmaW2)
	}
	return "none"
}

// mismatch is a Load error of kind ErrCheckpointMismatch.
func mismatch(format string, args ...any) *loadError {
	return &loadError{kind: ErrCheckpointMismatch, msg: fmt.Sprintf(format, args...)}
}
