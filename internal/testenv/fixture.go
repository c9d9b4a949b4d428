package testenv

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// RoundTrip reads a Lambda event fixture and checks that it is in the
// event type's own shape: it decodes into T with every field known (a
// misspelt or invented field fails) and encodes back to the same JSON.
// normalize, if set, is applied to both sides before they are compared
// (for fields the SDK type always writes, even empty). It returns the event.
func RoundTrip[T any](t *testing.T, path string, normalize func(any) any) T {
	t.Helper()
	var ev T
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("%s is not a %T: %v", path, ev, err)
	}
	back, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	if normalize != nil {
		want, got = normalize(want), normalize(got)
	}
	if !reflect.DeepEqual(want, got) {
		w, _ := json.MarshalIndent(want, "", " ")
		g, _ := json.MarshalIndent(got, "", " ")
		t.Errorf("%s: the round trip through %T changed the event:\nfile:\n%s\nround trip:\n%s", path, ev, w, g)
	}
	return ev
}
