package gitstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/sponson/terraform-provider-sponson/internal/errcode"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// Quarantined states: kept on the scope's branch without a lease, never
// replacing its state (docs/design.md §2.12).

// quarantineMeta records when a state was quarantined and in which file.
type quarantineMeta struct {
	RunID string    `json:"runId"`
	At    time.Time `json:"at"`
	File  string    `json:"file"`
}

// Quarantine stores quarantine/<runId>.tfstate(.enc) without a fence: the
// file is named by the run, so it can replace nothing but its own earlier
// copy. A refused push still only retries this commit's own files on the
// new tip, never anything that depends on a lease.
func (s *Store) Quarantine(ctx context.Context, key store.Key, runID string, state []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if err := checkName("run id", runID); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return ctxError(ctx, "quarantining a state of "+key.String())
	}
	payload, name, _, err := s.sealState(key, quarantineDir+"/"+runID, state)
	if err != nil {
		return err
	}
	file := runID + strings.TrimPrefix(name, "terraform") // <runId>.tfstate(.enc)
	meta, err := json.MarshalIndent(quarantineMeta{RunID: runID, At: s.clock(), File: file}, "", "  ")
	if err != nil {
		return errcode.Wrap(errcode.Internal, err, "encode quarantine metadata")
	}
	return s.mutate(ctx, key, func(cur *snapshot, now time.Time) (*change, error) {
		files := map[string][]byte{
			quarantineDir + "/" + runID + ".json": append(meta, '\n'),
			quarantineDir + "/" + file:            payload,
		}
		if _, ok := cur.root[readmeFile]; !ok {
			files[readmeFile] = readme(key)
		}
		return &change{files: files, msg: fmt.Sprintf("quarantine a state of run %s in %s", runID, key), keep: &kept{what: "quarantined state", name: "quarantine-" + file, data: payload}}, nil
	})
}

// ListQuarantine returns the quarantined states of key, oldest first.
func (s *Store) ListQuarantine(ctx context.Context, key store.Key) ([]store.Quarantined, error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	snap, err := s.read(ctx, key)
	if err != nil {
		return nil, err
	}
	dir, ok := snap.root[quarantineDir]
	if !ok || dir.mode != modeTree {
		return nil, nil
	}
	entries, err := s.tree(dir.id)
	if err != nil {
		return nil, err
	}
	var out []store.Quarantined
	for n := range entries {
		runID, isMeta := strings.CutSuffix(n, ".json")
		if !isMeta || checkName("run id", runID) != nil {
			continue
		}
		b, _, err := s.readFile(snap, quarantineDir+"/"+n)
		if err != nil {
			return nil, err
		}
		var m quarantineMeta
		if err := json.Unmarshal(b, &m); err != nil || m.RunID != runID || strings.Contains(m.File, "/") {
			return nil, errcode.New(errcode.ReceiptCorrupt, "%s:%s/%s does not parse", branchOf(key), quarantineDir, n)
		}
		data, ok, err := s.readFile(snap, quarantineDir+"/"+m.File)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errcode.New(errcode.ReceiptCorrupt, "%s:%s/%s names %s, which is missing", branchOf(key), quarantineDir, n, m.File)
		}
		if strings.HasSuffix(m.File, ".enc") {
			if data, err = unseal(s.key, sealContext(key, quarantineDir+"/"+runID), "the quarantined state of run "+runID+" in "+key.String(), data); err != nil {
				return nil, err
			}
		}
		out = append(out, store.Quarantined{RunID: runID, At: m.At, State: data})
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].RunID < out[j].RunID
	})
	return out, nil
}
