package scoperun

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/sponson/terraform-provider-sponson/internal/receipt"
)

// The state server hands the wrapper every state the engine writes, so the
// ledger is read from those bytes instead of starting the engine again for
// `show -json`. Only the stable, documented top of the format is read:
// resources with mode, type, name, module, provider and instance ids.

type rawState struct {
	Resources []struct {
		Module    string `json:"module"`
		Mode      string `json:"mode"`
		Type      string `json:"type"`
		Name      string `json:"name"`
		Provider  string `json:"provider"`
		Instances []struct {
			IndexKey   any            `json:"index_key"`
			Attributes map[string]any `json:"attributes"`
		} `json:"instances"`
	} `json:"resources"`
}

// stateResource is one managed resource instance of a state.
type stateResource struct {
	Address, Provider, Type, ID string
}

var providerSource = regexp.MustCompile(`^provider\["([^"]+)"\]`)

// readState lists the managed resource instances of a raw state, sorted by
// address. An empty or absent state has none.
func readState(data []byte) ([]stateResource, error) {
	if len(data) == 0 {
		return nil, nil
	}
	var st rawState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("reading the scope's state: %w", err)
	}
	var out []stateResource
	for _, r := range st.Resources {
		if r.Mode != "managed" {
			continue
		}
		provider := r.Provider
		if m := providerSource.FindStringSubmatch(r.Provider); m != nil {
			provider = m[1]
		}
		base := r.Type + "." + r.Name
		if r.Module != "" {
			base = r.Module + "." + base
		}
		for _, in := range r.Instances {
			addr := base
			switch k := in.IndexKey.(type) {
			case float64:
				addr += fmt.Sprintf("[%d]", int64(k))
			case string:
				addr += fmt.Sprintf("[%q]", k)
			}
			id, _ := in.Attributes["id"].(string)
			out = append(out, stateResource{Address: addr, Provider: provider, Type: r.Type, ID: id})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}

// ledgerFromState lists what a scope owns after a run: every managed
// resource of its state, keyed by identity. An entry the previous ledger
// already had keeps how it came to be owned.
func ledgerFromState(resources []stateResource, prev *receipt.Receipt) []receipt.Entry {
	known := map[string]receipt.Entry{}
	if prev != nil {
		for _, e := range prev.Ledger {
			known[e.Identity] = e
		}
	}
	out := []receipt.Entry{}
	for _, r := range resources {
		e := receipt.Entry{
			Identity:  Identity(r.Provider, r.Type, r.ID),
			Address:   r.Address,
			Provider:  r.Provider,
			Type:      r.Type,
			ID:        r.ID,
			CreatedBy: receipt.CreatedBySponson,
		}
		if old, ok := known[e.Identity]; ok && old.CreatedBy != "" && old.CreatedBy != receipt.CreatedByIntent {
			e.CreatedBy = old.CreatedBy
		}
		out = append(out, e)
	}
	return out
}

// intentIdentity keys an intent: the create has not happened, so the
// resource has no id yet; its address stands in until the run settles it.
func intentIdentity(provider, typ, address string) string {
	return Identity(provider, typ, "") + "intent:" + address
}

// isIntent reports whether a ledger entry is an unsettled intent.
func isIntent(e receipt.Entry) bool {
	return e.CreatedBy == receipt.CreatedByIntent || strings.Contains(e.Identity, "|intent:")
}

// Identity is the ledger key of a resource: provider source, type and id.
func Identity(provider, typ, id string) string {
	return provider + "|" + typ + "|" + id
}

// Changes lists the planned actions on managed resources, no-ops left out.
func Changes(p *tfjson.Plan) []receipt.Change {
	out := []receipt.Change{}
	if p == nil {
		return out
	}
	for _, rc := range p.ResourceChanges {
		if rc.Mode != tfjson.ManagedResourceMode || rc.Change == nil || rc.Change.Actions.NoOp() {
			continue
		}
		acts := make([]string, len(rc.Change.Actions))
		for i, a := range rc.Change.Actions {
			acts[i] = string(a)
		}
		out = append(out, receipt.Change{Address: rc.Address, Type: rc.Type, Actions: acts})
	}
	return out
}
