// Package failtest is a testing.TB that records failures instead of
// failing, for the tests of the test helpers: it shows that a check
// fails when it should, and what it says.
package failtest

import (
	"fmt"
	"runtime"
	"testing"
)

// TB records Errorf and Fatalf; Fatalf stops the calling goroutine as
// the real one does. Other methods are not for use.
type TB struct {
	testing.TB
	Errors []string // every failure, in order
}

// Helper does nothing.
func (r *TB) Helper() {}

// Errorf records a failure.
func (r *TB) Errorf(format string, args ...any) {
	r.Errors = append(r.Errors, fmt.Sprintf(format, args...))
}

// Fatalf records a failure and ends the goroutine.
func (r *TB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// Fatal records a failure and ends the goroutine.
func (r *TB) Fatal(args ...any) {
	r.Errors = append(r.Errors, fmt.Sprint(args...))
	runtime.Goexit()
}

// Run calls f on its own goroutine, so that a Fatal ends only f, and
// returns the failures it recorded.
func Run(f func(testing.TB)) []string {
	r := &TB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.Errors
}

// First is the first failure f records, or "" when it passes.
func First(f func(testing.TB)) string {
	if errs := Run(f); len(errs) > 0 {
		return errs[0]
	}
	return ""
}
