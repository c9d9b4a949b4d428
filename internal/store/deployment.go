package store

import (
	"context"
	"errors"
	"time"
)

// ErrDeploymentChanged answers a deployment record write whose expected
// version is no longer the stored one (another reconciler wrote first); nothing was
// written.
var ErrDeploymentChanged = errors.New("deployment record changed since it was read")

// Deployment is the deployment generation that last took over the store:
// the reconciler's record of it, so that what a (re)start does
// (container.recover_running_dag_on_start) is done once per deployment,
// however many reconcilers run.
type Deployment struct {
	// Generation identifies the deployment (wiring.Generation).
	Generation string `json:"generation"`
	// Since is when a reconciler first saw it: instances that have not
	// changed since were last changed under an earlier deployment.
	Since time.Time `json:"since"`
	// Settled: what the takeover does is done.
	Settled bool `json:"settled"`
	// Version increases by one with every write (0: none stored).
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
}

// DeploymentStore keeps the Deployment record: one document, written only
// conditionally on its version.
type DeploymentStore interface {
	// GetDeployment returns the stored record, or a zero one (Version 0)
	// when none was ever stored.
	GetDeployment(ctx context.Context) (Deployment, error)
	// PutDeployment replaces the record if the stored one is still at
	// d.Version (0: none stored), and returns it as stored, at
	// d.Version+1 with UpdatedAt set; else ErrDeploymentChanged and
	// nothing is written.
	PutDeployment(ctx context.Context, d Deployment) (Deployment, error)
}
