package client

import (
	"context"
	"net/http"
)

// PauseContainer asks for a running container's processes to be frozen,
// their memory kept (202; a paused one is left as it is: 200). ifMatch,
// when not empty, is the version the container must be at.
func (c *Client) PauseContainer(ctx context.Context, id, ifMatch string) (Instance, error) {
	return c.lifecycle(ctx, http.MethodPost, containerPath(id)+"/pause", ifMatch)
}

// ResumeContainer asks for a paused container to carry on where it was
// (202; a running one is left as it is: 200).
func (c *Client) ResumeContainer(ctx context.Context, id, ifMatch string) (Instance, error) {
	return c.lifecycle(ctx, http.MethodPost, containerPath(id)+"/resume", ifMatch)
}
