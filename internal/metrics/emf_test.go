package metrics

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestEmitWritesEMF(t *testing.T) {
	var buf bytes.Buffer
	e := New(&buf, map[string]string{"Function": "worker"})
	e.Duration("CreateDuration", 1500*time.Millisecond, "Op", "create")
	var doc struct {
		Function       string
		Op             string
		CreateDuration float64
		AWS            struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v: %s", err, buf.String())
	}
	cw := doc.AWS.CloudWatchMetrics
	if doc.CreateDuration != 1500 || doc.Function != "worker" || doc.Op != "create" || len(cw) != 1 ||
		cw[0].Namespace != Namespace || cw[0].Metrics[0].Name != "CreateDuration" || cw[0].Metrics[0].Unit != Milliseconds ||
		len(cw[0].Dimensions[0]) != 2 || doc.AWS.Timestamp == 0 {
		t.Fatalf("bad EMF document: %s", buf.String())
	}
	var nilEmitter *Emitter
	nilEmitter.Count("X", 1) // must not panic
}
