package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// CommentLimit is the largest body GitHub takes for an issue or pull request
// comment, in characters.
const CommentLimit = 65536

// Comment is an issue or pull request comment: the fields of the REST API's
// issue-comment object Sponson reads.
type Comment struct {
	ID      int64  `json:"id"`
	Body    string `json:"body"`
	HTMLURL string `json:"html_url,omitempty"`
}

// Comments lists the comments of pull request (or issue) number of repo
// (OWNER/NAME): GET /repos/{owner}/{repo}/issues/{number}/comments, every
// page.
func (c *Client) Comments(ctx context.Context, repo string, number int) ([]Comment, error) {
	u, base, err := c.issueURL(repo, number)
	if err != nil {
		return nil, err
	}
	u.RawQuery = url.Values{"per_page": {fmt.Sprint(perPage)}}.Encode()
	maxPages := c.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	var out []Comment
	for page := 1; u != nil; page++ {
		if page > maxPages {
			return nil, fmt.Errorf("GitHub API: more than %d pages of comments on %s#%d; stopped", maxPages, repo, number)
		}
		var cs []Comment
		link, err := c.do(ctx, http.MethodGet, u, nil, &cs, "a list of comments")
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
		if u, err = nextPage(base, link); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CreateComment posts a comment on pull request number of repo: POST
// /repos/{owner}/{repo}/issues/{number}/comments with {"body": ...}.
func (c *Client) CreateComment(ctx context.Context, repo string, number int, body string) (Comment, error) {
	u, _, err := c.issueURL(repo, number)
	if err != nil {
		return Comment{}, err
	}
	var out Comment
	_, err = c.do(ctx, http.MethodPost, u, map[string]string{"body": body}, &out, "a comment")
	return out, err
}

// UpdateComment replaces the body of comment id of repo: PATCH
// /repos/{owner}/{repo}/issues/comments/{id}.
func (c *Client) UpdateComment(ctx context.Context, repo string, id int64, body string) (Comment, error) {
	owner, name, err := ParseRepo(repo)
	if err != nil {
		return Comment{}, err
	}
	base, err := c.base()
	if err != nil {
		return Comment{}, err
	}
	u := base.JoinPath("repos", owner, name, "issues", "comments", fmt.Sprint(id))
	var out Comment
	_, err = c.do(ctx, http.MethodPatch, u, map[string]string{"body": body}, &out, "a comment")
	return out, err
}

func (c *Client) issueURL(repo string, number int) (*url.URL, *url.URL, error) {
	owner, name, err := ParseRepo(repo)
	if err != nil {
		return nil, nil, err
	}
	if number <= 0 {
		return nil, nil, fmt.Errorf("pull request number %d is not positive", number)
	}
	base, err := c.base()
	if err != nil {
		return nil, nil, err
	}
	return base.JoinPath("repos", owner, name, "issues", fmt.Sprint(number), "comments"), base, nil
}
