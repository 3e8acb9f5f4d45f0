package filestore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
	"github.com/sponson/terraform-provider-sponson/internal/store"
)

// The read-only listings the overview reads beyond the contract
// (internal/overview, docs/design.md §4.8): every receipt a scope kept,
// and the environments the store holds. Neither is part of store.Store: a
// backend without them shows a scope's latest receipt alone and the
// declared environments.

// Every store lists its receipts for the overview.
var _ store.History = (*Store)(nil)

// ReceiptHistory returns every receipt kept of the scope, one per run
// (receipts/<runId>.json), oldest first (store.SortHistory); nil when it
// has none.
func (s *Store) ReceiptHistory(ctx context.Context, key store.Key) ([]*receipt.Receipt, error) {
	if err := store.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rdir := filepath.Join(s.scopeDir(key), receiptsDir)
	entries, err := os.ReadDir(rdir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError("list", rdir, err)
	}
	var out []*receipt.Receipt
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue // temporary files of a write under way
		}
		r, err := readReceipt(filepath.Join(rdir, e.Name()))
		if err != nil {
			return nil, err
		}
		if r != nil {
			out = append(out, r)
		}
	}
	store.SortHistory(out)
	return out, nil
}

// Environments returns the environments the store holds a stack of,
// sorted.
func (s *Store) Environments(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir := filepath.Join(s.root, stacksDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fsError("list", dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && store.CheckName("environment", e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}
