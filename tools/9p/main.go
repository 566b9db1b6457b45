// Command 9p reads and writes an ether9 namespace over 9P2000.L.
//
//	go run ./tools/9p [-a 127.0.0.1:5640] ls /dev/iommu
//	go run ./tools/9p cat /dev/iommu/stats
//	ETHER9_TOKEN=... go run ./tools/9p stream /net/ether0/capture | tshark -r -
//	ETHER9_TOKEN=... go run ./tools/9p write /dev/iommu/ctl deferred 64
//
// Writes and streams need the machine's token (ether9.token, or the one its console
// printed at boot), from $ETHER9_TOKEN.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/ether9/ether9/ns/ninep"
)

func main() {
	addr := flag.String("a", "127.0.0.1:564", "server address")
	timeout := flag.Duration("t", 10*time.Second, "dial timeout")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: 9p [-a host:port] ls PATH... | cat PATH... | stream PATH | write PATH WORDS...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*addr, *timeout, os.Getenv("ETHER9_TOKEN"), flag.Args()); err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "9p: ") {
			msg = "9p: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

func run(addr string, timeout time.Duration, token string, args []string) error {
	if len(args) < 2 {
		flag.Usage()
		return fmt.Errorf("need a command and a path")
	}
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	c, err := ninep.DialToken(conn, token)
	if err != nil {
		conn.Close()
		return err
	}
	defer c.Close()
	switch args[0] {
	case "ls":
		for _, p := range args[1:] {
			ents, err := c.List(p)
			if err != nil {
				return err
			}
			for _, e := range ents {
				if e.Dir {
					fmt.Println(e.Name + "/")
				} else {
					fmt.Println(e.Name)
				}
			}
		}
	case "cat":
		for _, p := range args[1:] {
			s, err := c.Read(p)
			if err != nil {
				return err
			}
			fmt.Print(s)
		}
	case "stream":
		r, err := c.Stream(args[1])
		if err != nil {
			return err
		}
		defer r.Close()
		// As it comes: a capture goes on until capture off.
		if _, err := io.Copy(os.Stdout, r); err != nil {
			return err
		}
	case "write":
		if len(args) < 3 {
			return fmt.Errorf("write: need a path and a command")
		}
		return c.Write(args[1], strings.Join(args[2:], " ")+"\n")
	default:
		return fmt.Errorf("unknown command %q (ls, cat, stream, write)", args[0])
	}
	return nil
}
