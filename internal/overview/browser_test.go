package overview_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/sponson/terraform-provider-sponson/internal/overview"
	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// chromium finds the browser: SPONSON_CHROMIUM, else Debian's chromium
// or another of its names on PATH. Without one the test skips, unless
// SPONSON_REQUIRE_CHROMIUM=1 (CI), where it fails.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SPONSON_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SPONSON_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("SPONSON_REQUIRE_CHROMIUM=1 and no chromium on PATH (apt-get install chromium, or set SPONSON_CHROMIUM)")
	}
	t.Skip("no chromium on PATH; set SPONSON_REQUIRE_CHROMIUM=1 to make this a failure")
	return ""
}

// pageEvents collects what the page must not produce: console errors,
// uncaught exceptions, log errors (a refused load, a CSP violation) and
// requests for anything but the page itself.
type pageEvents struct {
	mu       sync.Mutex
	problems []string
	requests []string
	ends     map[string]bool
	changed  chan struct{}
}

func (p *pageEvents) add(problem string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case strings.Contains(problem, "sponson-test-end-console"):
		p.ends["sponson-test-end-console"] = true
	case strings.Contains(problem, "sponson-test-end-exception"):
		p.ends["sponson-test-end-exception"] = true
	default:
		p.problems = append(p.problems, problem)
	}
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// waitEnd waits for both sentinels: a console error and an exception the
// test raises after its checks, so that every event the page raised
// before them has been read.
func (p *pageEvents) waitEnd(ctx context.Context) error {
	for {
		p.mu.Lock()
		done := p.ends["sponson-test-end-console"] && p.ends["sponson-test-end-exception"]
		p.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-p.changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func listen[E any](ctx context.Context, ev cdp.Event[E], each func(E) string, p *pageEvents) {
	events := chromedp.Events(ctx, ev)
	go func() {
		for e, err := range events {
			if err != nil {
				return
			}
			if s := each(e); s != "" {
				p.add(s)
			}
		}
	}()
}

// visibleRows are the scope rows the browser draws, as env/stack/scope.
const visibleRows = `Array.from(document.querySelectorAll("#scopes tbody tr.scope")).filter(r => r.getClientRects().length > 0).map(r => r.dataset.env + "/" + r.dataset.stack + "/" + r.dataset.scope)`

// TestPageInChromium loads the page of a store of three stacks in two
// environments in headless Chromium: no console error, exception or
// request beyond the page; every live scope drawn; the filters and the
// sort change the rows drawn; on a phone's width nothing is wider than
// the screen. The screenshots go where the log says (SPONSON_SCREENSHOT_DIR,
// else the test's temporary directory).
func TestPageInChromium(t *testing.T) {
	exe := chromium(t)
	in, write := fixtureInput(t)
	m, err := overview.Build(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := overview.Render(&b, m, overview.RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pagePath := filepath.Join(dir, "overview.html")
	if err := os.WriteFile(pagePath, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("SPONSON_SCREENSHOT_DIR")
	if shots == "" {
		shots = dir
	}

	// A guard against a wedged browser, not a measure: the steps wait for
	// conditions.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	p := &pageEvents{ends: map[string]bool{}, changed: make(chan struct{}, 1)}
	listen(bctx, runtime.ConsoleAPICalled, func(e runtime.EventConsoleAPICalled) string {
		if e.Type != runtime.ConsoleAPICalledTypeError && e.Type != runtime.ConsoleAPICalledTypeAssert {
			return ""
		}
		var args []string
		for _, a := range e.Args {
			args = append(args, string(a.Value)+a.Description)
		}
		return "console." + string(e.Type) + ": " + strings.Join(args, " ")
	}, p)
	listen(bctx, runtime.ExceptionThrown, func(e runtime.EventExceptionThrown) string {
		return (&chromedp.ExceptionError{ExceptionDetails: e.ExceptionDetails}).Error()
	}, p)
	listen(bctx, cdplog.EntryAdded, func(e cdplog.EventEntryAdded) string {
		if e.Entry.Level != cdplog.EntryLevelError {
			return ""
		}
		return "log: " + e.Entry.Text + " " + e.Entry.URL
	}, p)
	listen(bctx, network.RequestWillBeSent, func(e network.EventRequestWillBeSent) string {
		p.mu.Lock()
		p.requests = append(p.requests, e.Request.URL)
		p.mu.Unlock()
		return ""
	}, p)
	if _, err := chromedp.Call(bctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(bctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}

	rows := func() []string {
		t.Helper()
		got, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](visibleRows))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	// choose picks an option of a select as the browser does when a
	// person picks it: the value, then the change event.
	choose := func(sel, value string) {
		t.Helper()
		js := `(() => { const e = document.querySelector(` + strconv.Quote(sel) + `); e.value = ` + strconv.Quote(value) + `; e.dispatchEvent(new Event("change")); return e.value === ` + strconv.Quote(value) + ` && e.selectedIndex >= 0; })()`
		ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](js))
		if err != nil || !ok {
			t.Fatalf("choosing %q in %s: %v (no such option?)", value, sel, err)
		}
	}
	shot := func(name string, capture chromedp.Action[[]byte]) {
		t.Helper()
		png, err := chromedp.Run(bctx, capture)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(shots, name)
		if err := os.WriteFile(path, png, 0o644); err != nil { //nolint:gosec // a screenshot to look at
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", path)
	}

	if err := chromedp.Do(bctx,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate("file://"+pagePath),
		chromedp.WaitVisible(chromedp.CSS("#scopes")),
	); err != nil {
		t.Fatal(err)
	}

	// Every scope but the destroyed one, which is folded, in the model's
	// order: environments, stacks in dependency order, scopes by name.
	all := []string{
		"preview/acme/network/main", "preview/acme/network/pr-1", "preview/acme/app/branch-feat-x", "preview/acme/app/pr-2",
		"preview/acme/legacy/branch-old", "production/acme/network/main", "production/acme/app/main",
	}
	if d := cmp.Diff(all, rows()); d != "" {
		t.Errorf("rows drawn at load (-want +got):\n%s", d)
	}
	shot("overview.png", chromedp.FullScreenshot(100))

	// The environment filter, chosen with the keyboard as a person would;
	// the others by value.
	if err := chromedp.Do(bctx, chromedp.SendKeys(chromedp.CSS("#f-env"), "production")); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"production/acme/network/main", "production/acme/app/main"}, rows()); d != "" {
		t.Errorf("rows with environment production (-want +got):\n%s", d)
	}
	choose("#f-env", "")
	// The state filter: the scope whose run died holding its lease.
	choose("#f-state", "stale-lease")
	if d := cmp.Diff([]string{"preview/acme/app/branch-feat-x"}, rows()); d != "" {
		t.Errorf("rows in state stale-lease (-want +got):\n%s", d)
	}
	choose("#f-state", "collectable")
	if d := cmp.Diff([]string{"preview/acme/network/pr-1", "preview/acme/legacy/branch-old"}, rows()); d != "" {
		t.Errorf("rows in state collectable (-want +got):\n%s", d)
	}
	choose("#f-state", "")
	// The destroyed scopes, unfolded by a click; then sorted oldest first.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#f-destroyed"))); err != nil {
		t.Fatal(err)
	}
	if got := rows(); len(got) != 8 || !strings.Contains(strings.Join(got, " "), "preview/acme/db/pr-9") {
		t.Errorf("rows with the destroyed shown: %v", got)
	}
	choose("#f-sort", "age-desc")
	if got := rows(); len(got) != 8 || got[0] != "preview/acme/legacy/branch-old" || got[1] != "preview/acme/db/pr-9" || got[7] != "preview/acme/app/pr-2" {
		t.Errorf("rows oldest first: %v", got)
	}
	// A scope's receipts, opened.
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`tr[data-scope="main"][data-env="preview"] summary`))); err != nil {
		t.Fatal(err)
	}
	n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`Array.from(document.querySelectorAll('tr[data-scope="main"][data-env="preview"] ol.tl li')).filter(li => li.getClientRects().length > 0).length`))
	if err != nil || n != 2 {
		t.Errorf("preview/main's timeline shows %d receipts (%v), want 2", n, err)
	}

	// On a phone's width the rows become cards: nothing wider than the
	// screen.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	width, err := chromedp.Run(bctx, chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth, document.querySelector("thead").getClientRects().length]`))
	if err != nil {
		t.Fatal(err)
	}
	if width[0] > width[1] || width[2] != 0 {
		t.Errorf("at 390 px the page is %d px wide (screen %d), table head drawn %v", width[0], width[1], width[2] != 0)
	}
	// The phone's screen, scrolled to the first cards.
	if err := chromedp.Do(bctx, chromedp.ScrollIntoView(chromedp.CSS("#filters"))); err != nil {
		t.Fatal(err)
	}
	shot("overview-phone.png", chromedp.CaptureScreenshot())

	verdict(t, bctx, ctx, p, func(u string) bool { return u == "file://"+pagePath })

	// Live, as `sponson serve` serves it: a scope written to the store
	// appears without a reload (the marker set on the page survives).
	srv := httptest.NewServer(overview.Handler(func(ctx context.Context) (*overview.Model, error) {
		return overview.Build(ctx, in)
	}, ""))
	defer srv.Close()
	if err := chromedp.Do(bctx,
		chromedp.EmulateViewport(1280, 800),
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#scopes")),
	); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.sponsonMarker = "before"; true`)); err != nil {
		t.Fatal(err)
	}
	choose("#f-env", "preview")
	write(scopeSpec{env: "preview", stack: "acme/app", scope: "pr-88", runs: []run{
		{command: "apply", status: receipt.StatusApplied, ago: time.Minute, pr: 88, branch: "feat/live", actor: "eve", commit: "8888888", owns: 1},
	}})
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.querySelector('tr[data-scope="pr-88"]') !== null`)); err != nil {
		t.Fatalf("the new scope never appeared: %v", err)
	}
	live, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[String(window.sponsonMarker), document.getElementById("f-env").value]`))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"before", "preview"}, live); d != "" {
		t.Errorf("after the redraw, marker and environment filter (-want +got):\n%s", d)
	}
	if got := rows(); !slices.Contains(got, "preview/acme/app/pr-88") || slices.ContainsFunc(got, func(r string) bool { return strings.HasPrefix(r, "production/") }) {
		t.Errorf("rows after the redraw: %v", got)
	}
	verdict(t, bctx, ctx, p, func(u string) bool { return strings.HasPrefix(u, srv.URL+"/") })
}

// verdict raises the sentinels, waits for them, and fails on anything the
// page raised or a request allowed refuses; then it starts afresh.
func verdict(t *testing.T, bctx, ctx context.Context, p *pageEvents, allowed func(string) bool) {
	t.Helper()
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`console.error("sponson-test-end-console"); setTimeout(() => { throw new Error("sponson-test-end-exception"); }, 0); true`)); err != nil {
		t.Fatal(err)
	}
	if err := p.waitEnd(ctx); err != nil {
		t.Fatalf("the sentinel events never came: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.problems) > 0 {
		t.Errorf("the page raised:\n%s", strings.Join(p.problems, "\n"))
	}
	for _, u := range p.requests {
		if !allowed(u) {
			t.Errorf("the page requested %s", u)
		}
	}
	if len(p.requests) == 0 {
		t.Error("no request seen: the network listener saw nothing, so it proves nothing")
	}
	p.problems, p.requests, p.ends = nil, nil, map[string]bool{}
}
