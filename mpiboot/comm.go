package mpiboot

import (
	"time"

	"github.com/gccl/gccl"
	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/device"
	"github.com/gccl/gccl/internal/mpi"
	"github.com/gccl/gccl/internal/wait"
)

// idMessage is what rank 0 broadcasts: a status byte (1 = the ID follows,
// 0 = rank 0 could not make one) and the unique ID.
const idMessage = 1 + comm.UniqueIDBytes

// ShareUniqueID makes a unique ID on rank 0 of the job and broadcasts it
// (Comm.ShareUniqueID on mpiboot's duplicate of MPI_COMM_WORLD).
func ShareUniqueID() (comm.UniqueID, error) {
	w, err := world()
	if err != nil {
		return comm.UniqueID{}, err
	}
	return w.ShareUniqueID()
}

// ShareUniqueID makes a unique ID on rank 0 of c and broadcasts it over c;
// every process of c must call it. When rank 0 fails, every process gets an error.
func (c *Comm) ShareUniqueID() (comm.UniqueID, error) {
	msg := make([]byte, idMessage)
	var idErr error
	if c.Rank() == 0 {
		id, err := comm.NewUniqueID()
		if err == nil {
			msg[0] = 1
			copy(msg[1:], id.Bytes())
		}
		idErr = err
	}
	if err := c.Bcast(msg, 0); err != nil {
		return comm.UniqueID{}, err
	}
	switch {
	case idErr != nil:
		return comm.UniqueID{}, idErr
	case msg[0] != 1:
		return comm.UniqueID{}, gccl.Errorf(gccl.RemoteError, "rank 0", "rank 0 could not create the unique ID; see its error")
	}
	return comm.ParseUniqueID(msg[1:])
}

// NewComm creates this process's communicator over every process of the job
// (Comm.NewComm on mpiboot's duplicate of MPI_COMM_WORLD).
func NewComm(cfg *comm.Config) (*comm.Comm, error) {
	w, err := world()
	if err != nil {
		return nil, err
	}
	return w.NewComm(cfg)
}

// NewComm creates this process's gccl communicator over the processes of c:
// rank and size from c, the unique ID made by c's rank 0 and broadcast over
// c, and the device set to the local rank within c unless cfg sets one (NCCL
// guide, "one device per process"). Every process of c must call it.
func (c *Comm) NewComm(cfg *comm.Config) (*comm.Comm, error) {
	id, err := c.ShareUniqueID()
	if err != nil {
		return nil, err
	}
	dev := c.localRank
	if cfg != nil && cfg.DeviceSet {
		dev = cfg.Device
	}
	cc := withDevice(cfg, dev)
	return comm.InitRankConfig(c.Size(), id, c.Rank(), &cc)
}

// NewComms creates ngpus communicators in this process over every process
// of the job (Comm.NewComms on mpiboot's duplicate of MPI_COMM_WORLD).
func NewComms(ngpus int, cfg *comm.Config) ([]*comm.Comm, error) {
	w, err := world()
	if err != nil {
		return nil, err
	}
	return w.NewComms(ngpus, cfg)
}

// NewComms creates ngpus communicators in this process, for devices
// LocalRank()*ngpus + i (or cfg.Device + i when cfg sets a device), as ranks
// rank*ngpus + i of one communicator of ngpus × Size() ranks (NCCL guide,
// "multiple devices per process"). The ranks initialise concurrently
// (comm.InitRanks); if one fails the others are aborted and the first error
// is returned. Finalize them together: group.Finalize for each in one group.
func (c *Comm) NewComms(ngpus int, cfg *comm.Config) ([]*comm.Comm, error) {
	if ngpus < 1 {
		return nil, gccl.Errorf(gccl.InvalidArgument, "ngpus", "%d devices per process; pass 1 or more", ngpus)
	}
	id, err := c.ShareUniqueID()
	if err != nil {
		return nil, err
	}
	first := c.localRank * ngpus
	if cfg != nil && cfg.DeviceSet {
		first = cfg.Device
	}
	reqs := make([]comm.InitReq, ngpus)
	for i := range reqs {
		cc := withDevice(cfg, first+i)
		reqs[i] = comm.InitReq{NRanks: c.Size() * ngpus, ID: id, Rank: c.Rank()*ngpus + i, Config: &cc}
	}
	return comm.InitRanks(reqs)
}

// withDevice copies cfg (nil = defaults) with the device set to dev.
func withDevice(cfg *comm.Config, dev int) comm.Config {
	var c comm.Config
	if cfg != nil {
		c = *cfg
	}
	c.Device, c.DeviceSet = dev, true
	return c
}

// Wait waits until the work on stream s of device d is done, calling
// MPI_Iprobe between polls so that MPI implementations that progress only
// inside MPI calls keep serving the other ranks (NCCL guide §4.2.1); use it
// instead of d.Synchronize(s) while MPI traffic may be pending. timeout 0
// means mpiboot's deadline (SetTimeout, else GCCL_TIMEOUT); past it Wait
// returns gccl.ErrTimeout. A stream that failed returns its error.
func Wait(d device.Device, s gccl.Stream, timeout time.Duration) error {
	switch {
	case d == nil:
		return gccl.Errorf(gccl.InvalidArgument, "d", "nil device; pass the communicator's device (c.Device())")
	case timeout < 0:
		return gccl.Errorf(gccl.InvalidArgument, "timeout", "negative timeout %v; pass 0 for the default", timeout)
	case timeout == 0:
		timeout = mpi.Timeout()
	}
	// Yield for the first spinFor, so that operations of microseconds are
	// not slowed down by the timer's granularity; then sleep up to 1ms.
	p := wait.Poller{Deadline: time.Now().Add(timeout), What: "stream", SpinFor: spinFor, MaxSleep: time.Millisecond}
	for {
		done, err := d.Query(s)
		if err != nil || done {
			return err
		}
		if _, err := Iprobe(); err != nil {
			return err
		}
		if p.Pause() != nil {
			return gccl.Errorf(gccl.TimeoutError, "stream", "stream %#x not done after %v; a peer may be missing, abort the communicator", uintptr(s), timeout)
		}
	}
}

// spinFor is how long Wait only yields between polls.
const spinFor = 500 * time.Microsecond
