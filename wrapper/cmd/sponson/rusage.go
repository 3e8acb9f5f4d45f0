package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// usage is what SPONSON_RUSAGE writes when the command ends: the CPU and
// peak memory of sponson's own process, apart from those of the processes it
// started and waited for (the engine, its plugins, git, the watcher), as
// the operating system counts them (getrusage), so that a benchmark can
// compare sponson's own cost with the engine's (docs/design.md §8).
type usage struct {
	SelfCPU        float64 `json:"selfCpuSeconds"`
	ChildrenCPU    float64 `json:"childrenCpuSeconds"`
	SelfMaxRSS     int64   `json:"selfMaxRssKiB"`
	ChildrenMaxRSS int64   `json:"childrenMaxRssKiB"`
}

// reportUsage writes the usage to path as one JSON document, or does
// nothing when path is empty. When path is a directory, each sponson
// process writes its own file there, PID.json: a run over many stacks
// starts one sponson per stack, and a benchmark adds up their own CPU.
func reportUsage(path string) {
	if path == "" {
		return
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, strconv.Itoa(os.Getpid())+".json")
	}
	var self, children syscall.Rusage
	err := syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	if err == nil {
		err = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	}
	if err == nil {
		b, _ := json.Marshal(usage{
			SelfCPU: seconds(self.Utime) + seconds(self.Stime), ChildrenCPU: seconds(children.Utime) + seconds(children.Stime),
			SelfMaxRSS: self.Maxrss, ChildrenMaxRSS: children.Maxrss,
		})
		err = os.WriteFile(path, append(b, '\n'), 0o600)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "warning: SPONSON_RUSAGE: %v\n", err)
	}
}

func seconds(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
