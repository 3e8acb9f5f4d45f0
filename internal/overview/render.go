package overview

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"time"
)

//go:embed page.html.tmpl
var files embed.FS

var page = template.Must(template.New("page.html.tmpl").Funcs(template.FuncMap{
	"age":    ageText,
	"at":     atText,
	"short":  shortCommit,
	"join":   strings.Join,
	"states": func(s []string) string { return strings.Join(s, " ") },
	"owner":  func(o Owner) string { return o.Kind },
}).ParseFS(files, "page.html.tmpl"))

// RenderOptions change how the page is drawn.
type RenderOptions struct {
	// Live makes the page poll PollURL (the model as JSON) and redraw
	// itself when the store changed, without a reload (`sponson serve`).
	Live    bool
	PollURL string
}

// Render writes the model as one self-contained HTML page: inline CSS,
// script and SVG, no external asset and no network use (html/template
// escapes every value the store holds).
func Render(w io.Writer, m *Model, o RenderOptions) error {
	envSet, stackSet := []string{}, []string{}
	seenEnv, seenStack := map[string]bool{}, map[string]bool{}
	var live, destroyed []Scope
	for _, s := range m.Scopes {
		if !seenEnv[s.Environment] {
			seenEnv[s.Environment] = true
			envSet = append(envSet, s.Environment)
		}
		if s.LastRun != nil && s.LastRun.Status == "destroyed" {
			destroyed = append(destroyed, s)
		} else {
			live = append(live, s)
		}
	}
	for _, st := range m.Stacks {
		if !seenStack[st.Name] {
			seenStack[st.Name] = true
			stackSet = append(stackSet, st.Name)
		}
	}
	return page.Execute(w, map[string]any{
		"M": m, "Opts": o, "Envs": envSet, "Stacks": stackSet, "Graph": graphOf(m.Stacks),
		"Rows": append(live, destroyed...), "Destroyed": len(destroyed),
	})
}

// Graph is the stacks' dependency graph laid out for SVG: a column per
// depth, the stacks of a depth one under the other.
type Graph struct {
	Width, Height int
	Nodes         []Node
	Edges         []Edge
}

// Node is a stack drawn.
type Node struct {
	X, Y   int
	Name   string
	Label  string
	Gone   bool
	Scopes int
}

// Edge is a dependency drawn, from the stack needed to the one needing it.
type Edge struct{ X1, Y1, X2, Y2 int }

const (
	nodeW, nodeH = 170, 34
	colGap       = 60
	rowGap       = 14
	pad          = 10
)

func graphOf(stacks []Stack) Graph {
	var g Graph
	rows := map[int]int{}
	at := map[string]Node{}
	last := 0 // the column of the stacks without a directory
	for _, st := range stacks {
		if st.Directory != "" {
			last = max(last, st.Depth+1)
		}
	}
	for _, st := range stacks {
		d := st.Depth
		if st.Directory == "" { // no directory: a column of their own, last
			d = last
		}
		n := Node{X: pad + d*(nodeW+colGap), Y: pad + rows[d]*(nodeH+rowGap), Name: st.Name, Label: clip(st.Name, 24), Gone: st.Gone, Scopes: st.Scopes}
		rows[d]++
		at[st.Name] = n
		g.Nodes = append(g.Nodes, n)
		g.Width = max(g.Width, n.X+nodeW+pad)
		g.Height = max(g.Height, n.Y+nodeH+pad)
	}
	for _, st := range stacks {
		to := at[st.Name]
		for _, need := range st.Needs {
			from, ok := at[need]
			if !ok {
				continue
			}
			g.Edges = append(g.Edges, Edge{X1: from.X + nodeW, Y1: from.Y + nodeH/2, X2: to.X, Y2: to.Y + nodeH/2})
		}
	}
	return g
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

func ageText(seconds int64) string {
	d := time.Duration(seconds) * time.Second
	switch {
	case seconds <= 0:
		return "-"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func atText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func shortCommit(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}
