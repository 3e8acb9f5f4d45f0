package cmdutil

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/sponson/terraform-provider-sponson/internal/scoperun"
)

// waitLogInterval is how often a wait for a lease prints a line in a CI log:
// a ten-minute wait polled every 2 s is twenty lines, not three hundred.
const waitLogInterval = 30 * time.Second

// waitLine renders the progress of a wait for a scope's lease (who holds
// it, since when, how long this run has waited). On a terminal it is one
// line rewritten in place on every poll; anywhere else (a CI log, a file)
// a new line is printed on the first poll and then at most every interval,
// by the injected clock, so the pacing is tested without waiting on time.
type waitLine struct {
	w        io.Writer
	terminal bool
	now      func() time.Time
	interval time.Duration

	last time.Time // when the last line was printed; zero before the first
	open bool      // the terminal shows a line without its newline
}

func NewWaitLine(w io.Writer, terminal bool, now func() time.Time) *waitLine {
	if now == nil {
		now = time.Now
	}
	return &waitLine{w: w, terminal: terminal, now: now, interval: waitLogInterval}
}

// Event renders one scoperun.WaitEvent.
func (p *waitLine) Event(e scoperun.WaitEvent) {
	if e.Done {
		p.done()
		return
	}
	p.show(e.Line())
}

func (p *waitLine) show(line string) {
	if p.terminal {
		// Carriage return, then erase to the end of the line: a shorter line
		// leaves nothing of the longer one before it.
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		p.open = true
		return
	}
	now := p.now()
	if !p.last.IsZero() && now.Sub(p.last) < p.interval {
		return
	}
	p.last = now
	fmt.Fprintln(p.w, line)
}

// done ends the line on a terminal, so what follows starts on its own.
func (p *waitLine) done() {
	if p.open {
		fmt.Fprintln(p.w)
		p.open = false
	}
}

// isTerminal reports whether w is a terminal (a CI log never is).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
