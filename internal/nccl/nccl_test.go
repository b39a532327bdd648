package nccl

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeLib is an binding that records what it is asked and answers as told.
type fakeLib struct {
	ver        int
	noConfig   bool           // lacks ncclCommInitRankConfig
	busy       int            // asyncError answers ncclInProgress this many times
	initResult Result         // what initRank returns
	launchFail map[int]Result // launch fails at this op index with this result
	endResult  Result         // result of a grouped launch whose ops all issued

	calls    []string
	launched [][]packed
	grouped  []bool
	initCfg  *config
	initID   UniqueID
}

func (f *fakeLib) rec(format string, a ...any) { f.calls = append(f.calls, fmt.Sprintf(format, a...)) }

func (f *fakeLib) version() (int, Result) { return f.ver, Success }
func (f *fakeLib) uniqueID(id *UniqueID) Result {
	for i := range id {
		id[i] = byte(i*7 + 1)
	}
	return Success
}
func (f *fakeLib) initRank(nranks, rank int, id *UniqueID, cfg *config) (uintptr, Result) {
	f.rec("init %d %d %v", nranks, rank, cfg != nil)
	f.initCfg, f.initID = cfg, *id
	if f.initResult == Success && cfg != nil && !cfg.blocking {
		return 0xc0, InProgress
	}
	return 0xc0, f.initResult
}
func (f *fakeLib) destroy(comm uintptr) Result { f.rec("destroy %#x", comm); return Success }
func (f *fakeLib) abort(comm uintptr) Result   { f.rec("abort %#x", comm); return Success }
func (f *fakeLib) asyncError(comm uintptr) (Result, Result) {
	if f.busy > 0 {
		f.busy--
		return InProgress, Success
	}
	return Success, Success
}
func (f *fakeLib) launch(ops []packed, grouped bool) (int, Result) {
	f.launched = append(f.launched, append([]packed(nil), ops...))
	f.grouped = append(f.grouped, grouped)
	for i := range ops {
		if r, ok := f.launchFail[i]; ok {
			return i, r
		}
	}
	if grouped {
		return len(ops), f.endResult
	}
	return len(ops), Success
}
func (f *fakeLib) register(comm, p uintptr, size int) (uintptr, Result) {
	f.rec("register %#x %#x %d", comm, p, size)
	return p ^ 0xff, Success
}
func (f *fakeLib) deregister(comm, h uintptr) Result {
	f.rec("deregister %#x %#x", comm, h)
	return Success
}
func (f *fakeLib) memAlloc(size int) (uintptr, Result) {
	f.rec("alloc %d", size)
	return 0x1000, Success
}
func (f *fakeLib) memFree(p uintptr) Result      { f.rec("free %#x", p); return Success }
func (f *fakeLib) has(sym string) bool           { return sym != "ncclCommInitRankConfig" || !f.noConfig }
func (f *fakeLib) errorString(r Result) string   { return "desc of " + r.String() }
func (f *fakeLib) lastError(comm uintptr) string { return "last words" }

func newFakeComm(t *testing.T, f *fakeLib, nranks, rank int) *Comm {
	t.Helper()
	if f.ver == 0 {
		f.ver = 22805
	}
	n, err := newLibrary(f)
	require.NoError(t, err)
	c, err := n.InitRank(nranks, UniqueID{1, 2, 3}, rank, time.Second)
	require.NoError(t, err)
	return c
}

func TestNCCLEnumTables(t *testing.T) {
	// ncclDataType_t and ncclRedOp_t as NCCL 2.28's nccl.h defines them.
	wantType := map[string]int32{"int8": 0, "uint8": 1, "int32": 2, "uint32": 3, "int64": 4, "uint64": 5,
		"float16": 6, "float32": 7, "float64": 8, "bfloat16": 9, "fp8e4m3": 10, "fp8e5m2": 11}
	require.Len(t, gccl.DataTypes(), len(wantType), "a new gccl type needs an NCCL mapping")
	for _, dt := range gccl.DataTypes() {
		v, err := DataType(dt, 22805)
		require.NoError(t, err, dt)
		assert.Equal(t, wantType[dt.String()], v, dt)
	}
	wantOp := map[string]int32{"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4}
	for _, op := range gccl.RedOps() {
		v, err := RedOp(op, 22805)
		require.NoError(t, err, op)
		assert.Equal(t, wantOp[op.String()], v, op)
	}
	for _, bad := range []gccl.DataType{-1, gccl.DataType(len(wantType))} {
		_, err := DataType(bad, 0)
		assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	}
	_, err := RedOp(gccl.NumBuiltinOps, 0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
}

func TestNCCLEnumVersions(t *testing.T) {
	cases := []struct {
		t       gccl.DataType
		version int
		ok      bool
	}{
		{gccl.Float32, 2704, true}, {gccl.BFloat16, 2804, false}, {gccl.BFloat16, 21003, true},
		{gccl.Float8E4M3, 22304, false}, {gccl.Float8E5M2, 22400, true},
	}
	for _, c := range cases {
		_, err := DataType(c.t, c.version)
		if c.ok {
			assert.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, gccl.ErrInvalidArgument)
		assert.Equal(t, "datatype", err.(*gccl.Error).Arg)
		assert.Contains(t, err.Error(), VersionString(c.version))
	}
	_, err := RedOp(gccl.Avg, 2907)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.Equal(t, "2.8.4", VersionString(2804))
	assert.Equal(t, "2.28.5", VersionString(22805))
}

func TestNCCLErrors(t *testing.T) {
	for r := UnhandledCudaError; r <= Timeout; r++ {
		err := callError("ncclAllReduce", r, "it broke", "peer 3 gone", 22805)
		require.Error(t, err)
		assert.Equal(t, gccl.Result(r), gccl.Code(err), r)
		assert.ErrorIs(t, err, r)
		assert.Equal(t, "ncclAllReduce", err.(*gccl.Error).Arg)
		assert.Contains(t, err.Error(), "it broke")
		assert.Contains(t, err.Error(), "peer 3 gone")
	}
	assert.NoError(t, callError("x", Success, "", "", 0))
	err := callError("ncclCommRegister", SymbolMissing, "", "", 21805)
	assert.ErrorIs(t, err, gccl.ErrSystem)
	assert.Contains(t, err.Error(), "2.18.5")
	assert.Contains(t, err.Error(), "needs NCCL 2.19")
	assert.Equal(t, gccl.InternalError, gccl.Code(callError("f", Result(77), "", "", 0)))
}

func TestNCCLInitRank(t *testing.T) {
	f := &fakeLib{busy: 3}
	c := newFakeComm(t, f, 4, 2)
	assert.Equal(t, []string{"init 4 2 true"}, f.calls)
	require.NotNil(t, f.initCfg)
	assert.False(t, f.initCfg.blocking, "the baseline polls a nonblocking init to have a deadline")
	assert.Equal(t, UniqueID{1, 2, 3}, f.initID)
	assert.Equal(t, 0, f.busy, "init must poll until the communicator is ready")
	assert.Equal(t, 4, c.Count())
	assert.Equal(t, 2, c.Rank())

	old := &fakeLib{noConfig: true}
	newFakeComm(t, old, 2, 0)
	assert.Equal(t, []string{"init 2 0 false"}, old.calls)
}

func TestNCCLInitRankFailures(t *testing.T) {
	n, err := newLibrary(&fakeLib{ver: 22805})
	require.NoError(t, err)
	for _, bad := range []struct {
		nranks, rank int
		timeout      time.Duration
		arg          string
	}{{0, 0, time.Second, "nranks"}, {2, 2, time.Second, "rank"}, {2, -1, time.Second, "rank"}, {2, 0, 0, "timeout"}} {
		_, err := n.InitRank(bad.nranks, UniqueID{}, bad.rank, bad.timeout)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument)
		assert.Equal(t, bad.arg, err.(*gccl.Error).Arg)
	}

	stuck := &fakeLib{ver: 22805, busy: 1 << 30}
	n, _ = newLibrary(stuck)
	start := time.Now()
	_, err = n.InitRank(2, UniqueID{}, 1, 20*time.Millisecond)
	assert.ErrorIs(t, err, gccl.ErrTimeout)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Equal(t, "abort 0xc0", stuck.calls[len(stuck.calls)-1], "a timed-out init must be aborted")

	failed := &fakeLib{ver: 22805, initResult: SystemError}
	n, _ = newLibrary(failed)
	_, err = n.InitRank(2, UniqueID{}, 1, time.Second)
	assert.ErrorIs(t, err, SystemError)
	assert.Equal(t, "ncclCommInitRankConfig", err.(*gccl.Error).Arg)
	assert.Contains(t, failed.calls, "abort 0xc0")
}

func TestNCCLCloseAbort(t *testing.T) {
	f := &fakeLib{}
	c := newFakeComm(t, f, 2, 0)
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	require.NoError(t, c.Abort())
	assert.Equal(t, []string{"init 2 0 true", "destroy 0xc0"}, f.calls)
	assert.ErrorIs(t, c.AllReduce(1, 2, 3, gccl.Float32, gccl.Sum, 0), gccl.ErrInvalidUsage)
	assert.ErrorIs(t, c.AsyncError(), gccl.ErrInvalidUsage)
	_, err := c.Register(1, 1)
	assert.ErrorIs(t, err, gccl.ErrInvalidUsage)
	var nilComm *Comm
	assert.NoError(t, nilComm.Close())
	assert.NoError(t, nilComm.Abort())
	assert.ErrorIs(t, nilComm.Launch(0, Op{}), gccl.ErrInvalidUsage)
}

func TestNCCLRegisterAndMem(t *testing.T) {
	f := &fakeLib{}
	c := newFakeComm(t, f, 2, 1)
	h, err := c.Register(0xabc00, 4096)
	require.NoError(t, err)
	assert.Equal(t, uintptr(0xabc00^0xff), h)
	require.NoError(t, c.Deregister(h))
	_, err = c.Register(0, 16)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	_, err = c.Register(0x10, 0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.ErrorIs(t, c.Deregister(0), gccl.ErrInvalidArgument)
	p, err := c.n.MemAlloc(100)
	require.NoError(t, err)
	require.NoError(t, c.n.MemFree(p))
	_, err = c.n.MemAlloc(0)
	assert.ErrorIs(t, err, gccl.ErrInvalidArgument)
	assert.ErrorIs(t, c.n.MemFree(0), gccl.ErrInvalidArgument)
	assert.Equal(t, []string{"init 2 1 true", "register 0xc0 0xabc00 4096", "deregister 0xc0 0xabcff",
		"alloc 100", "free 0x1000"}, f.calls)
	require.NoError(t, c.AsyncError())
}

// randomOp makes a valid operation for rank of nranks.
func randomOp(rng *rand.Rand, nranks int) Op {
	types, ops := gccl.DataTypes(), gccl.RedOps()
	return Op{Kind: OpKind(rng.IntN(int(numOpKinds))), Send: uintptr(rng.Uint64() | 1),
		Recv: uintptr(rng.Uint64() | 1), Count: rng.IntN(1 << 30), Type: types[rng.IntN(len(types))],
		Op: ops[rng.IntN(len(ops))], Root: rng.IntN(nranks), Peer: rng.IntN(nranks)}
}

func TestNCCLLaunchPacking(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, uint64(time.Now().UnixNano())))
	f := &fakeLib{}
	c := newFakeComm(t, f, 5, 3)
	for range 200 {
		ops := make([]Op, 1+rng.IntN(6))
		for i := range ops {
			ops[i] = randomOp(rng, 5)
		}
		s := gccl.Stream(rng.Uint64())
		require.NoError(t, c.Launch(s, ops...))
		got := f.launched[len(f.launched)-1]
		assert.Equal(t, len(ops) > 1, f.grouped[len(f.grouped)-1])
		require.Len(t, got, len(ops))
		for i, o := range ops {
			p := got[i]
			dt, _ := DataType(o.Type, 0)
			assert.Equal(t, int32(o.Kind), p.kind)
			assert.Equal(t, dt, p.dtype)
			assert.Equal(t, uint64(o.Count), p.count)
			assert.Equal(t, o.Send, p.send)
			assert.Equal(t, o.Recv, p.recv)
			assert.Equal(t, uintptr(0xc0), p.comm)
			assert.Equal(t, uintptr(s), p.stream)
			switch o.Kind {
			case AllReduce, Reduce, ReduceScatter:
				op, _ := RedOp(o.Op, 0)
				assert.Equal(t, op, p.op, o.Kind)
			default:
				assert.Zero(t, p.op, o.Kind)
			}
			switch o.Kind {
			case Broadcast, Reduce:
				assert.Equal(t, int32(o.Root), p.root)
			case Send, Recv:
				assert.Equal(t, int32(o.Peer), p.root)
			default:
				assert.Zero(t, p.root)
			}
		}
	}
}

func TestNCCLLaunchBadArguments(t *testing.T) {
	f := &fakeLib{}
	c := newFakeComm(t, f, 4, 1)
	good := Op{Kind: AllReduce, Send: 0x100, Recv: 0x200, Count: 10, Type: gccl.Float32}
	cases := map[string]func(o *Op){
		"kind":     func(o *Op) { o.Kind = numOpKinds },
		"count":    func(o *Op) { o.Count = -1 },
		"datatype": func(o *Op) { o.Type = 99 },
		"op":       func(o *Op) { o.Op = gccl.NumBuiltinOps + 3 },
		"sendbuff": func(o *Op) { o.Send = 0 },
		"recvbuff": func(o *Op) { o.Recv = 0 },
		"root":     func(o *Op) { o.Kind, o.Root = Broadcast, 4 },
		"peer":     func(o *Op) { o.Kind, o.Peer = Send, -1 },
	}
	for arg, spoil := range cases {
		o := good
		spoil(&o)
		err := c.Launch(0, good, o)
		require.ErrorIs(t, err, gccl.ErrInvalidArgument, arg)
		assert.Equal(t, arg, err.(*gccl.Error).Arg)
	}
	big := good
	big.Type, big.Count = gccl.Float64, 1<<61
	assert.ErrorIs(t, c.Launch(0, big), gccl.ErrInvalidArgument)
	assert.Empty(t, f.launched, "nothing may be launched when an argument is bad")

	// What NCCL allows: nil buffers off the root, and zero counts.
	require.NoError(t, c.Reduce(0x100, 0, 10, gccl.Int32, gccl.Max, 0, 0))
	require.NoError(t, c.Broadcast(0, 0x200, 10, gccl.Int32, 2, 0))
	require.NoError(t, c.AllGather(0, 0, 0, gccl.Int8, 0))
	assert.ErrorIs(t, c.Reduce(0x100, 0, 10, gccl.Int32, gccl.Max, 1, 0), gccl.ErrInvalidArgument)
	assert.ErrorIs(t, c.Broadcast(0, 0x200, 10, gccl.Int32, 1, 0), gccl.ErrInvalidArgument)
	assert.ErrorIs(t, c.Send(0, 1, gccl.Int8, 0, 0), gccl.ErrInvalidArgument)
	assert.ErrorIs(t, c.Recv(0, 1, gccl.Int8, 0, 0), gccl.ErrInvalidArgument)
}

func TestNCCLLaunchResults(t *testing.T) {
	f := &fakeLib{}
	c := newFakeComm(t, f, 2, 0)
	send := Op{Kind: Send, Send: 1, Count: 4, Type: gccl.Uint8, Peer: 1}
	recv := Op{Kind: Recv, Recv: 2, Count: 4, Type: gccl.Uint8, Peer: 1}

	f.launchFail = map[int]Result{1: InvalidUsage}
	err := c.Launch(0, send, recv)
	require.ErrorIs(t, err, InvalidUsage)
	assert.Equal(t, "ncclRecv", err.(*gccl.Error).Arg)
	assert.Contains(t, err.Error(), "last words")

	f.launchFail, f.endResult = nil, RemoteError
	err = c.Launch(0, send, recv)
	require.ErrorIs(t, err, gccl.ErrRemote)
	assert.Equal(t, "ncclGroupEnd", err.(*gccl.Error).Arg)

	f.endResult, f.busy = InProgress, 5
	require.NoError(t, c.Launch(0, send, recv), "an in-progress group settles by polling")
	assert.Zero(t, f.busy)

	f.busy, c.timeout = 1<<30, 10*time.Millisecond
	err = c.Launch(0, send, recv)
	assert.True(t, errors.Is(err, gccl.ErrTimeout), "%v", err)
}
