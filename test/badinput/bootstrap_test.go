package badinput

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// initTimeout is the deadline of the bootstrap cases' communicators.
const initTimeout = 2 * time.Second

// initOne is a 1-rank InitRankConfig of id with initTimeout.
func initOne(id comm.UniqueID) error {
	c, err := comm.InitRankConfig(1, id, 0, &comm.Config{Timeout: initTimeout})
	if err == nil {
		_ = c.Close()
	}
	return err
}

// newID makes a unique ID, changed by change.
func newID(t *testing.T, change func(id *comm.UniqueID)) comm.UniqueID {
	id, err := comm.NewUniqueID()
	require.NoError(t, err)
	change(&id)
	return id
}

// reseal re-encodes id's fields, changed by change, with a valid checksum.
func reseal(t *testing.T, change func(r *wire.RootID)) comm.UniqueID {
	id, err := comm.NewUniqueID()
	require.NoError(t, err)
	r, err := wire.DecodeRootID(id[:])
	require.NoError(t, err)
	change(&r)
	return r.Encode()
}

// initN runs InitRankConfig(nranks[i], id, ranks[i]) for every i at once.
func initN(id comm.UniqueID, nranks, ranks []int) []error {
	errs := make([]error, len(ranks))
	done := make(chan struct{})
	for i := range ranks {
		go func() {
			defer func() { done <- struct{}{} }()
			c, err := comm.InitRankConfig(nranks[i], id, ranks[i], &comm.Config{Timeout: initTimeout})
			errs[i] = err
			if err == nil {
				_ = c.Abort()
			}
		}()
	}
	for range ranks {
		<-done
	}
	return errs
}

func bootstrapCases() []badCase {
	ia := gccl.InvalidArgument
	boot := func(name, did, arg string, code gccl.Result, words []string, then string, run func(t *testing.T) error) badCase {
		return badCase{name: name, class: bootstrap, did: did, code: code, arg: arg, words: words, then: then, run: run}
	}
	return []badCase{
		boot("id-short", "ParseUniqueID of 64 bytes", "uniqueId", ia, []string{"64 bytes, want 128"}, "", func(t *testing.T) error {
			id := newID(t, func(*comm.UniqueID) {})
			_, err := comm.ParseUniqueID(id[:64])
			return err
		}),
		boot("id-flipped-byte", "InitRank with one byte of the unique ID changed", "uniqueId", ia,
			[]string{"checksum", "corrupted in transit", "pass the bytes NewUniqueID made, unchanged"}, "", func(t *testing.T) error {
				return initOne(newID(t, func(id *comm.UniqueID) { id[70] ^= 0x5a }))
			}),
		boot("id-random", "InitRank with 128 random bytes as the unique ID", "uniqueId", ia, []string{"bad magic", "not a gccl unique ID"}, "",
			func(t *testing.T) error {
				var id comm.UniqueID
				for i := range id {
					id[i] = byte(31*i + 7)
				}
				return initOne(id)
			}),
		boot("id-zero", "InitRank with the zero UniqueID (never made by NewUniqueID)", "uniqueId", ia, []string{"not a gccl unique ID"}, "",
			func(t *testing.T) error { return initOne(comm.UniqueID{}) }),
		boot("id-wrong-secret", "InitRank with a well-formed ID whose secret was changed", "uniqueId", ia, []string{"wrong secret"},
			"the root refuses the handshake (the secret never crosses the wire); the genuine ID still works",
			func(t *testing.T) error {
				var genuine comm.UniqueID
				bad := reseal(t, func(r *wire.RootID) {
					genuine = r.Encode()
					r.Secret[0] ^= 1
				})
				err := initOne(bad)
				require.NoError(t, initOne(genuine))
				return err
			}),
		boot("id-foreign-key", "InitRank with a well-formed ID of a rendezvous its root never made", "uniqueId", ia,
			[]string{"never issued this unique ID"}, "",
			func(t *testing.T) error { return initOne(reseal(t, func(r *wire.RootID) { r.Key[5] ^= 0xff })) }),
		boot("id-dead-root", "InitRank with an ID whose root address has nothing listening", "uniqueId", gccl.RemoteError,
			[]string{"is the process that made the unique ID still running?"}, "",
			func(t *testing.T) error {
				l, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				addr := l.Addr().(*net.TCPAddr).AddrPort()
				require.NoError(t, l.Close())
				return initOne(reseal(t, func(r *wire.RootID) { r.Addr = addr }))
			}),
		boot("id-reused", "InitRank with an ID that already made a communicator", "uniqueId", gccl.InvalidUsage,
			[]string{"already created a communicator"}, "", func(t *testing.T) error {
				id := newID(t, func(*comm.UniqueID) {})
				require.NoError(t, initOne(id))
				return initOne(id)
			}),
		boot("init-nranks-zero", "InitRank(nranks=0)", "nranks", ia, []string{"0 ranks; pass between 1 and"}, "", func(t *testing.T) error {
			_, err := comm.InitRank(0, newID(t, func(*comm.UniqueID) {}), 0)
			return err
		}),
		boot("init-rank-out-of-range", "InitRank(nranks=2, rank=2)", "rank", ia, []string{"rank 2 is out of range [0, 2)"}, "", func(t *testing.T) error {
			_, err := comm.InitRank(2, newID(t, func(*comm.UniqueID) {}), 2)
			return err
		}),
		boot("init-duplicate-rank", "two callers both claim rank 0 of 2", "rank", ia, []string{"rank 0 joined twice"}, "both callers fail",
			func(t *testing.T) error {
				errs := initN(newID(t, func(*comm.UniqueID) {}), []int{2, 2}, []int{0, 0})
				require.Error(t, errs[1])
				assert.Equal(t, ia, gccl.Code(errs[1]), "%v", errs[1])
				return errs[0]
			}),
		boot("init-nranks-disagree", "rank 0 says nranks=2, rank 1 says nranks=3", "nranks", ia, []string{"ranks but rank(s) before it said", "every rank must pass the same count"}, "both callers fail",
			func(t *testing.T) error {
				errs := initN(newID(t, func(*comm.UniqueID) {}), []int{2, 3}, []int{0, 1})
				require.Error(t, errs[1])
				return errs[0]
			}),
		boot("init-missing-rank", "ranks 0 and 1 of 3 call InitRank, rank 2 never does", "ranks", gccl.TimeoutError, []string{"ranks [2] never arrived"},
			"on both ranks, after the 2 s deadline, naming the missing rank", func(t *testing.T) error {
				start := time.Now()
				errs := initN(newID(t, func(*comm.UniqueID) {}), []int{3, 3}, []int{0, 1})
				assert.Less(t, time.Since(start), 2*initTimeout)
				expect(t, gccl.TimeoutError, "ranks", []string{"ranks [2] never arrived"}, errs[1])
				return errs[0]
			}),
		boot("root-garbage", "garbage bytes sent to the root's port while the ranks join", "", gccl.Success, nil,
			"the root hangs up on the garbage; both ranks join", func(t *testing.T) error {
				id := newID(t, func(*comm.UniqueID) {})
				r, err := wire.DecodeRootID(id[:])
				require.NoError(t, err)
				conn, err := net.Dial("tcp", r.Addr.String())
				require.NoError(t, err)
				defer conn.Close()
				_, _ = conn.Write([]byte("GET / HTTP/1.0\r\n\r\n\x00\xff\xfe garbage"))
				return errors.Join(initN(id, []int{2, 2}, []int{0, 1})...)
			}),
	}
}
