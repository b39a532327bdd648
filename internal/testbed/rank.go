package testbed

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gccl/gccl/comm"
	"github.com/gccl/gccl/internal/wait"
)

// Place is where a rank Launch started stands: read from its environment.
type Place struct {
	Rank, NRanks, Host, Local int
	IDFile                    string
}

// PlaceFromEnv returns this process's place, or an error when it was not
// started by Launch.
func PlaceFromEnv() (Place, error) {
	var p Place
	for _, v := range []struct {
		name string
		to   *int
	}{{EnvRank, &p.Rank}, {EnvNRanks, &p.NRanks}, {EnvHost, &p.Host}, {EnvLocal, &p.Local}} {
		s, ok := os.LookupEnv(v.name)
		if !ok {
			return p, fmt.Errorf("testbed: %s is not set: this process was not started by testbed.Launch (gccl-bed run)", v.name)
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return p, fmt.Errorf("testbed: %s=%q: %v", v.name, s, err)
		}
		*v.to = n
	}
	p.IDFile = os.Getenv(EnvIDFile)
	if p.IDFile == "" {
		return p, fmt.Errorf("testbed: %s is not set: this process was not started by testbed.Launch", EnvIDFile)
	}
	return p, nil
}

// Join makes the job's communicator through gccl's socket bootstrap: rank
// 0 makes the unique ID (its rendezvous listener on its host's eth0) and
// writes it to p.IDFile; the other ranks wait up to timeout for the file.
func (p Place) Join(cfg *comm.Config, timeout time.Duration) (*comm.Comm, error) {
	id, err := p.uniqueID(timeout)
	if err != nil {
		return nil, err
	}
	return comm.InitRankConfig(p.NRanks, id, p.Rank, cfg)
}

func (p Place) uniqueID(timeout time.Duration) (comm.UniqueID, error) {
	if p.Rank == 0 {
		id, err := comm.NewUniqueID()
		if err != nil {
			return id, err
		}
		tmp := p.IDFile + ".tmp"
		if err := os.WriteFile(tmp, id.Bytes(), 0o600); err != nil {
			return id, fmt.Errorf("testbed: writing the unique ID: %w", err)
		}
		return id, os.Rename(tmp, p.IDFile)
	}
	poll := wait.Poller{Deadline: time.Now().Add(timeout), What: "unique ID file " + p.IDFile, MaxSleep: 20 * time.Millisecond}
	for {
		b, err := os.ReadFile(p.IDFile)
		if err == nil {
			return comm.ParseUniqueID(b)
		}
		if !os.IsNotExist(err) {
			return comm.UniqueID{}, fmt.Errorf("testbed: reading the unique ID: %w", err)
		}
		if err := poll.Pause(); err != nil {
			return comm.UniqueID{}, fmt.Errorf("testbed: rank 0 wrote no unique ID to %s within %v (did it start?): %w", p.IDFile, timeout, err)
		}
	}
}
