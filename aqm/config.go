package aqm

// Config holds every sch_dualpi2 parameter, in the kernel's units inside
// (ns for times) and tc's names in comments. DefaultConfig gives the
// kernel's defaults; New and Validate reject what the kernel would.
type Config struct {
	Limit             uint32 // limit: packets in both queues
	MemLimit          uint64 // memlimit: bytes of queued packet data
	Target            int64  // target: PI target queue delay, ns
	Tupdate           int64  // tupdate: PI update interval, ns
	Alpha             uint32 // alpha: integral gain, Hz·256 (netlink units; 41 ≙ 0.16 Hz)
	Beta              uint32 // beta: proportional gain, Hz·256 (819 ≙ 3.2 Hz)
	Coupling          uint8  // coupling_factor k
	StepThresh        int64  // step_thresh: ns, or packets when StepInPackets
	StepInPackets     bool   // step_thresh given as Np
	MinQlenStep       uint32 // min_qlen_step: packets
	DropOverload      bool   // drop_on_overload (true) or overflow (false)
	DropEnqueue       bool   // drop_enqueue (true) or drop_dequeue (false)
	ClassicProtection uint8  // classic_protection: C-queue WRR weight, %
	ECNMask           uint8  // 1 = l4s_ect (ECT(1), CE), 3 = any_ect
	MTU               int    // bytes; the 2-MTU guard and the WRR credit use it
}

// Kinds of queue discipline NewQueue builds.
const (
	KindDualPI2 = "dualpi2"
	KindFIFO    = "fifo"
)

// FIFOConfig sizes the tail-drop FIFO, the "no L4S queue management"
// baseline. A zero limit means no limit of that kind; at least one must be set.
type FIFOConfig struct {
	Limit     uint32 // packets
	ByteLimit uint64 // bytes of packet data
}

// Spec names a queue discipline and its configuration: what flags give for
// one direction and what NewQueue builds.
type Spec struct {
	Kind    string // KindDualPI2 or KindFIFO
	DualPI2 Config
	FIFO    FIFOConfig
}
