package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/gccl/gccl/internal/testbed"
)

// streamCmd measures one TCP stream between two hosts of the bed.
func streamCmd(args []string) error {
	var bf bedFlags
	fs := flag.NewFlagSet("stream", flag.ExitOnError)
	bf.add(fs)
	from := fs.Int("from", 0, "the sending host")
	to := fs.Int("to", 1, "the receiving host")
	size := fs.Int64("bytes", 1<<30, "bytes per stream")
	repeat := fs.Int("repeat", 3, "streams, one after another")
	timeout := fs.Duration("timeout", 2*time.Minute, "deadline of each stream")
	parse(fs, args, false)
	b, err := bf.open()
	if err != nil {
		return err
	}
	defer b.Close()
	hosts := b.Hosts()
	if *from == *to || *from < 0 || *to < 0 || *from >= len(hosts) || *to >= len(hosts) {
		return fmt.Errorf("stream: -from %d -to %d: want two different hosts of %d", *from, *to, len(hosts))
	}
	best := 0.0
	for i := range *repeat {
		d, err := stream(b, *from, *to, hosts[*to].Addr.String(), *size, *timeout)
		if err != nil {
			return err
		}
		gbps := float64(*size) * 8 / d.Seconds() / 1e9
		best = max(best, gbps)
		fmt.Printf("tcp stream %d: %s -> %s  %d bytes in %v: %.2f Gbit/s (%.2f GB/s)\n", i, hosts[*from].Name, hosts[*to].Name, *size, d.Round(time.Millisecond), gbps, gbps/8)
	}
	fmt.Printf("tcp stream best: %.2f Gbit/s (%.2f GB/s)\n", best, best/8)
	return nil
}

// stream sends n bytes over one TCP connection from host from to a
// listener in host to, and returns the time until the receiver had them
// all (it answers one byte).
func stream(b *testbed.Bed, from, to int, addr string, n int64, timeout time.Duration) (time.Duration, error) {
	var ln net.Listener
	if err := b.Host(to, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(addr, "0"))
		return err
	}); err != nil {
		return 0, err
	}
	defer ln.Close()
	deadline := time.Now().Add(timeout)
	recvd := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			recvd <- err
			return
		}
		defer c.Close()
		_ = c.SetDeadline(deadline)
		got, err := io.Copy(io.Discard, io.LimitReader(c, n))
		if err == nil && got != n {
			err = fmt.Errorf("received %d of %d bytes", got, n)
		}
		if err == nil {
			_, err = c.Write([]byte{1})
		}
		recvd <- err
	}()
	var c net.Conn
	if err := b.Host(from, func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}); err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	buf := make([]byte, 1<<20)
	start := time.Now()
	for left := n; left > 0; {
		w, err := c.Write(buf[:min(int64(len(buf)), left)])
		if err != nil {
			return 0, fmt.Errorf("stream: sending: %w", err)
		}
		left -= int64(w)
	}
	if _, err := io.ReadFull(c, buf[:1]); err != nil {
		return 0, errors.Join(fmt.Errorf("stream: waiting for the receiver: %w", err), <-recvd)
	}
	d := time.Since(start)
	if err := <-recvd; err != nil {
		return 0, fmt.Errorf("stream: receiving: %w", err)
	}
	return d, nil
}
