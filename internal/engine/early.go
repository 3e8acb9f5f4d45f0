package engine

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
)

// PendingApply is an apply started before the run has decided to apply
// (docs/design.md §8, the early apply): an engine process costs
// 100 to 150 ms before it does anything, which it spends while sponson
// reads and checks the plan. It must not write before the run decides:
// the run holds the engine's requests to the state server (statesrv.Gate),
// which the engine makes before anything else of an apply, and the engine's
// output is held too, so that an apply the run stops leaves no trace in
// the run's output.
type PendingApply struct {
	out, errOut *heldWriter
	ui          *uiStream
	done        chan struct{}
	err         error
	// heartbeat is the session's; stopBeat ends the beat Release started.
	heartbeat time.Duration
	stopBeat  func()
	// wrap is the session's: the engine's failure as ENGINE_FAILED.
	wrap func(step string, err error) error
}

// StartApply starts applying plan in the background with the engine's
// output held (Release passes it on, Discard drops it). It runs on a
// terraform-exec instance of its own: an instance's output writer is one
// field, which the commands the run makes meanwhile (show) would share.
func (s *Session) StartApply(ctx context.Context, plan string) (*PendingApply, error) {
	tf, err := tfexec.NewTerraform(s.tf.WorkingDir(), s.Binary)
	if err != nil {
		return nil, errcode.Wrap(errcode.EngineNotFound, err, "cannot use engine %s", s.Binary)
	}
	if v, err := version.NewVersion(s.Version); err == nil {
		seedVersion(tf, v)
	}
	if err := passLogging(tf); err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "passing TF_LOG to the engine")
	}
	restore, err := withCLIArgs("apply", s.flags.applyExtra())
	if err != nil {
		return nil, errcode.Wrap(errcode.Internal, err, "passing flags to the engine")
	}
	ui := s.applyUI()
	p := &PendingApply{out: &heldWriter{dst: ui}, errOut: &heldWriter{dst: s.stderr}, ui: ui, done: make(chan struct{}), heartbeat: s.heartbeat, stopBeat: func() {}, wrap: s.wrap}
	tf.SetStderr(p.errOut)
	go func() {
		defer close(p.done)
		defer restore()
		p.err = s.applyJSON(ctx, tf, p.out, plan)
	}()
	return p, nil
}

// Release passes on the engine's output, what it held and what follows,
// and starts the apply's heartbeat (uiStream.heartbeat).
func (p *PendingApply) Release() {
	p.stopBeat = p.ui.heartbeat(p.heartbeat, time.Now)
	p.out.pass(true)
	p.errOut.pass(true)
}

// Discard drops the engine's output, what it held and what follows.
func (p *PendingApply) Discard() {
	p.out.pass(false)
	p.errOut.pass(false)
}

// Wait waits for the engine to end and returns its failure; call it once,
// after Release or Discard.
func (p *PendingApply) Wait() error {
	<-p.done
	p.stopBeat()
	p.out.flush(p.ui.Flush)
	return p.wrap("apply", p.ui.said(p.err))
}

// heldWriter keeps what is written until pass decides: then it writes
// what it kept to dst and everything after it (pass true), or drops it
// all (pass false).
type heldWriter struct {
	mu      sync.Mutex
	dst     io.Writer
	held    bytes.Buffer
	decided bool
	passes  bool
}

func (h *heldWriter) Write(b []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.decided:
		return h.held.Write(b)
	case h.passes && h.dst != nil:
		return h.dst.Write(b)
	}
	return len(b), nil
}

func (h *heldWriter) pass(passes bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.decided {
		return
	}
	h.decided, h.passes = true, passes
	if passes && h.dst != nil && h.held.Len() > 0 {
		_, _ = h.dst.Write(h.held.Bytes())
	}
	h.held.Reset()
}

// flush runs f (the stream's last line) if the output passes.
func (h *heldWriter) flush(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.decided && h.passes {
		f()
	}
}
