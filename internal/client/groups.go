package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

func groupPath(name string) string { return "/api/groups/" + url.PathEscape(name) }

func ownerQuery(owner string) url.Values {
	q := url.Values{}
	if owner != "" {
		q.Set("owner", owner)
	}
	return q
}

// ListGroups returns one page of the caller's groups (an admin may name
// another owner), in name order, with their members counted by status.
func (c *Client) ListGroups(ctx context.Context, owner, cursor string, limit int) (Page[GroupSummary], error) {
	q := pageQuery(ownerQuery(owner), cursor, limit)
	var p Page[GroupSummary]
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/api/groups", query: q, retry: true}, &p)
	return p, err
}

// ListAllGroups follows next_cursor to the last page.
func (c *Client) ListAllGroups(ctx context.Context, owner string) ([]GroupSummary, error) {
	var all []GroupSummary
	seen := map[string]bool{}
	cursor := ""
	for {
		p, err := c.ListGroups(ctx, owner, cursor, 100)
		if err != nil {
			return all, err
		}
		all = append(all, p.Items...)
		if p.NextCursor == "" {
			return all, nil
		}
		if seen[p.NextCursor] {
			return all, errors.New("the server repeated a page cursor; stopping")
		}
		seen[p.NextCursor] = true
		cursor = p.NextCursor
	}
}

// GetGroup returns a group with its members (404 when it has none).
func (c *Client) GetGroup(ctx context.Context, name, owner string) (Group, error) {
	var g Group
	_, err := c.do(ctx, request{method: http.MethodGet, path: groupPath(name), query: ownerQuery(owner), retry: true}, &g)
	return g, err
}

// FinishGroup ends a group with outcome (succeeded, failed or cancelled):
// the server applies dag_node_cleanup_on_dag_finished to every member.
// A repeat finds the members already handled, so it is retried like a read.
func (c *Client) FinishGroup(ctx context.Context, name, owner, outcome string) (GroupResult, error) {
	body, err := jsonBody(map[string]string{"outcome": outcome})
	if err != nil {
		return GroupResult{}, err
	}
	var res GroupResult
	_, err = c.do(ctx, request{method: http.MethodPost, path: groupPath(name) + "/finish", query: ownerQuery(owner), body: body, retry: true}, &res)
	return res, err
}

// ResetGroup deletes every member of a group (409 when the server's
// cleanup_dag_node_containers_before_start is false).
func (c *Client) ResetGroup(ctx context.Context, name, owner string) (GroupResult, error) {
	var res GroupResult
	_, err := c.do(ctx, request{method: http.MethodPost, path: groupPath(name) + "/reset", query: ownerQuery(owner), retry: true}, &res)
	return res, err
}
