package emulate_test

import (
	"net/http"
	"slices"
	"testing"
	"time"
)

// TestLifecycle drives one container through the emulated stack's front
// door on a real Docker engine: create → running → stop → stopped → start
// → running → delete → gone, and checks the events the API records.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	st := start(t, setup{})
	id := st.create(aliceToken, "busybox", "life")
	st.wait(aliceToken, id, "running", time.Minute)

	if r := st.do(http.MethodPost, "/api/containers/"+id+"/stop", aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("stop: %d %s", r.status, r.body)
	}
	st.wait(aliceToken, id, "stopped", time.Minute)
	if r := st.do(http.MethodPost, "/api/containers/"+id+"/start", aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	st.wait(aliceToken, id, "running", time.Minute)
	if r := st.do(http.MethodDelete, "/api/containers/"+id, aliceToken, nil); r.status != http.StatusAccepted {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		r := st.do(http.MethodGet, "/api/containers/"+id, aliceToken, nil)
		if r.status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still there a minute after the delete: %d %s", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	r := st.do(http.MethodGet, "/api/containers/"+id+"/events", aliceToken, nil)
	if r.status != http.StatusOK {
		t.Fatalf("events: %d %s", r.status, r.body)
	}
	var types []string
	for _, e := range r.json(t)["items"].([]any) {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	want := []string{"ContainerCreateRequested", "ContainerCreating", "ContainerStarted",
		"ContainerStopRequested", "ContainerStopping", "ContainerStopped",
		"ContainerStartRequested", "ContainerStarting", "ContainerStarted",
		"ContainerDeleteRequested", "ContainerDeleting", "ContainerDeleted"}
	if !slices.Equal(types, want) {
		t.Errorf("events:\n got %v\nwant %v", types, want)
	}
	states, err := st.rt.List(t.Context())
	if err != nil || len(states) != 0 {
		t.Errorf("containers left on the engine: %v (%v)", states, err)
	}
	// Every function ran as its own bootstrap under the RIE.
	for _, fn := range []string{"ApiFunction", "DispatcherFunction"} {
		if len(st.functionPIDs(fn)) == 0 {
			t.Errorf("%s never started under the RIE", fn)
		}
	}
}
