package emulate

import (
	"net/http"
	"testing"
)

// TestNotRunnableHere: a template PUT refused only for what the deployment
// lacks (its runtime, a node with its host_labels) is skipped at seeding;
// any other refusal stops the start.
func TestNotRunnableHere(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		skip   bool
	}{
		{http.StatusUnprocessableEntity, `{"errors":[{"field":"runtime","message":"must be one of \"kubernetes\""}]}`, true},
		{http.StatusUnprocessableEntity, `{"errors":[{"field":"runtime","message":"this deployment has no Docker host"},` +
			`{"field":"scheduling.host_labels","message":"no Docker host has the labels disk=ssd"}]}`, true},
		{http.StatusUnprocessableEntity, `{"errors":[{"field":"runtime","message":"x"},{"field":"image","message":"is required"}]}`, false},
		{http.StatusUnprocessableEntity, `{"errors":[]}`, false},
		{http.StatusUnprocessableEntity, `not json`, false},
		{http.StatusForbidden, `{"errors":[{"field":"runtime","message":"x"}]}`, false},
	} {
		rec := &responseRecorder{header: http.Header{}, status: tc.status}
		rec.body.WriteString(tc.body)
		if why, skip := notRunnableHere(rec); skip != tc.skip || (skip && why == "") {
			t.Errorf("%d %s: skip %v (%q), want %v", tc.status, tc.body, skip, why, tc.skip)
		}
	}
}
