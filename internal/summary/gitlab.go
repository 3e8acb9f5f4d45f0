package summary

import "encoding/json"

// GitLabReport is the document GitLab reads from artifacts:reports:terraform
// to show a plan's counts on the merge request: create, update and delete,
// a replacement counting as one create and one delete (as the flattened
// actions of the plan JSON do in GitLab's own template).
func GitLabReport(cs []Change) []byte {
	n := Count(cs)
	b, _ := json.Marshal(struct {
		Create int `json:"create"`
		Update int `json:"update"`
		Delete int `json:"delete"`
	}{n.Add, n.Change, n.Destroy})
	return append(b, '\n')
}
