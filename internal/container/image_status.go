package container

import "time"

// ImageStatus is a template's image as one Docker host (or Kubernetes
// cluster) had it when berth last looked, refreshed
// at start when container.refresh_image_status_on_start is true (and by the
// reconciler on AWS). It is berth's to write: a template PUT clears it.
type ImageStatus struct {
	// Host is the Docker host or cluster name.
	Host string `json:"host"`
	// Image is the image reference that was looked up.
	Image string `json:"image"`
	// Status is present, missing or error.
	Status string `json:"status"`
	// ImageID is the image's id on the host, when present.
	ImageID string `json:"image_id,omitempty"`
	// Error says why the lookup failed (status error).
	Error     string    `json:"error,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
}

// The image statuses.
const (
	ImagePresent = "present"
	ImageMissing = "missing"
	ImageError   = "error"
)
