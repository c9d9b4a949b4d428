package emulate_test

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// awsMeter is a loopback proxy in front of DynamoDB Local and the SQS
// emulator that an emulated stack is pointed at, its functions and its
// pollers alike (they are separate processes: in-process SDK middleware
// would not see them). It forwards every request, and counts requests per
// API action and the capacity units DynamoDB Local reports. It changes one
// thing: each DynamoDB data-plane request asks for ReturnConsumedCapacity
// INDEXES, which berth's store does not ask for; on AWS the answer is the
// same whether asked or not, so the units are those of the unchanged
// request.
type awsMeter struct {
	ddbURL, sqsURL string
	tablePrefix    string
	local          *localDynamoDB

	mu sync.Mutex
	c  meterCounts
}

// meterCounts is what the meter saw, from its start or between two
// snapshots (sub).
type meterCounts struct {
	// Requests per "service.Action": dynamodb.TransactWriteItems,
	// streams.GetRecords, sqs.SendMessage …
	Requests map[string]float64
	// Errors per "service.Action.ErrorType" (a failed conditional write is
	// billed on AWS; DynamoDB Local reports no capacity for it).
	Errors map[string]float64
	// Capacity units as DynamoDB Local reports them, per
	// "write|read table[/index]" (the table name without the stack's
	// prefix).
	Units map[string]float64
	// WriteUnits and ReadUnits are Units' totals.
	WriteUnits, ReadUnits float64
	// EmptyReceives are ReceiveMessage calls that returned no message.
	EmptyReceives float64
	// QueryBytes is the size of the items that Query and Scan returned (as
	// DynamoDB sizes items): what their read units grow with.
	QueryBytes float64
}

// writeActions are the DynamoDB actions that consume write units; every
// other action with ConsumedCapacity consumes read units.
var writeActions = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true,
	"BatchWriteItem": true, "TransactWriteItems": true}

// capacityActions are the DynamoDB actions that take ReturnConsumedCapacity.
var capacityActions = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true,
	"BatchWriteItem": true, "TransactWriteItems": true, "GetItem": true, "BatchGetItem": true,
	"TransactGetItems": true, "Query": true, "Scan": true}

// newAWSMeter starts the two proxies; tablePrefix is cut from table names.
func newAWSMeter(t testing.TB, ddbTarget, sqsTarget, tablePrefix string) *awsMeter {
	t.Helper()
	m := &awsMeter{c: newMeterCounts(), tablePrefix: tablePrefix, local: &localDynamoDB{url: ddbTarget, client: &http.Client{Timeout: time.Minute}}}
	m.ddbURL = m.serve(t, ddbTarget, m.dynamodb)
	m.sqsURL = m.serve(t, sqsTarget, m.sqs)
	return m
}

func newMeterCounts() meterCounts {
	return meterCounts{Requests: map[string]float64{}, Errors: map[string]float64{}, Units: map[string]float64{}}
}

// exchange is given a request (its X-Amz-Target and body) before it is
// forwarded and returns the body to forward and what to do with the
// answer (its body and status).
type exchange func(amzTarget string, req []byte) (forward []byte, answered func(resp []byte, status int))

// serve runs one proxy to target.
func (m *awsMeter) serve(t testing.TB, target string, ex exchange) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: time.Minute}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body, answered := ex(r.Header.Get("X-Amz-Target"), body)
		out, err := http.NewRequestWithContext(r.Context(), r.Method, strings.TrimSuffix(target, "/")+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		out.Header.Del("Content-Length")
		out.ContentLength = int64(len(body))
		resp, err := client.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		rb, err := io.ReadAll(resp.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		answered(rb, resp.StatusCode)
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(rb)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// dynamodb asks for the capacity and counts the request and its units.
// DynamoDB Local reports a flat 4 units per table for any
// TransactWriteItems, whatever its items, and nothing for a write whose
// condition failed; the meter prices those itself (txnUnits,
// failedWriteUnits), as AWS bills them.
func (m *awsMeter) dynamodb(amzTarget string, req []byte) ([]byte, func([]byte, int)) {
	svc, action, _ := strings.Cut(amzTarget, ".")
	if strings.HasPrefix(svc, "DynamoDBStreams") {
		svc = "streams"
	} else {
		svc = "dynamodb"
	}
	var txn *txnImages
	if svc == "dynamodb" && capacityActions[action] {
		var in map[string]json.RawMessage
		if json.Unmarshal(req, &in) == nil {
			in["ReturnConsumedCapacity"] = json.RawMessage(`"INDEXES"`)
			if b, err := json.Marshal(in); err == nil {
				req = b
			}
		}
		if action == "TransactWriteItems" {
			txn = m.local.before(req)
		}
	}
	return req, func(resp []byte, status int) {
		var after map[string]float64
		if txn != nil && status == http.StatusOK {
			after = m.local.txnUnits(txn, m.tablePrefix)
		}
		var typ string
		if status != http.StatusOK {
			var e struct {
				Type string `json:"__type"`
			}
			_ = json.Unmarshal(resp, &e)
			_, typ, _ = strings.Cut(e.Type, "#")
			if typ == "ConditionalCheckFailedException" && writeActions[action] {
				after = m.local.failedWriteUnits(req, m.tablePrefix)
			}
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.c.Requests[svc+"."+action]++
		if status != http.StatusOK {
			m.c.Errors[svc+"."+action+"."+typ]++
		}
		if status != http.StatusOK && after == nil {
			return
		}
		if after != nil {
			for k, v := range after {
				m.c.Units["write "+k] += v
				m.c.WriteUnits += v
			}
			return
		}
		if svc == "dynamodb" && capacityActions[action] {
			m.units(action, req, resp)
		}
	}
}

// minimumRead are the reads AWS bills at least one 4 KB step for even when
// they find nothing (half a unit, one if strongly consistent); DynamoDB
// Local reports 0 for them.
var minimumRead = map[string]bool{"GetItem": true, "Query": true, "Scan": true}

// units adds the ConsumedCapacity of a response, and the bytes of the
// items a Query or Scan returned. The caller holds m.mu.
func (m *awsMeter) units(action string, req, resp []byte) {
	var out struct {
		ConsumedCapacity json.RawMessage
		Items            []map[string]json.RawMessage
	}
	if json.Unmarshal(resp, &out) != nil || len(out.ConsumedCapacity) == 0 {
		return
	}
	var in struct {
		TableName, IndexName string
		ConsistentRead       bool
	}
	_ = json.Unmarshal(req, &in)
	for _, it := range out.Items {
		m.c.QueryBytes += float64(itemSize(it))
	}
	var caps []consumedCapacity
	if out.ConsumedCapacity[0] == '[' {
		_ = json.Unmarshal(out.ConsumedCapacity, &caps)
	} else {
		var c consumedCapacity
		if json.Unmarshal(out.ConsumedCapacity, &c) == nil {
			caps = append(caps, c)
		}
	}
	kind := "read"
	if writeActions[action] {
		kind = "write"
	}
	for _, c := range caps {
		table := strings.TrimPrefix(c.TableName, m.tablePrefix)
		if c.CapacityUnits == 0 && minimumRead[action] {
			least, where := 0.5, table
			if in.ConsistentRead {
				least = 1
			}
			if in.IndexName != "" {
				where += "/" + in.IndexName
			}
			m.c.Units["read "+where] += least
			m.c.ReadUnits += least
			continue
		}
		if c.Table != nil {
			m.c.Units[kind+" "+table] += c.Table.CapacityUnits
		}
		for name, idx := range c.GlobalSecondaryIndexes {
			m.c.Units[kind+" "+table+"/"+name] += idx.CapacityUnits
		}
		if kind == "write" {
			m.c.WriteUnits += c.CapacityUnits
		} else {
			m.c.ReadUnits += c.CapacityUnits
		}
	}
}

// consumedCapacity is DynamoDB's ConsumedCapacity, as much as the meter
// reads of it.
type consumedCapacity struct {
	TableName     string
	CapacityUnits float64
	Table         *struct{ CapacityUnits float64 }
	// GlobalSecondaryIndexes' units are part of CapacityUnits: a GSI's
	// write is billed as a write of its own.
	GlobalSecondaryIndexes map[string]struct{ CapacityUnits float64 }
}

// sqs counts the request (SQS's JSON protocol: X-Amz-Target
// AmazonSQS.<Action>) and whether a receive was empty.
func (m *awsMeter) sqs(amzTarget string, req []byte) ([]byte, func([]byte, int)) {
	_, action, _ := strings.Cut(amzTarget, ".")
	return req, func(resp []byte, status int) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.c.Requests["sqs."+action]++
		if status != http.StatusOK {
			m.c.Errors["sqs."+action]++
			return
		}
		if action == "ReceiveMessage" {
			var out struct{ Messages []json.RawMessage }
			if json.Unmarshal(resp, &out) == nil && len(out.Messages) == 0 {
				m.c.EmptyReceives++
			}
		}
	}
}

// snapshot returns a copy of the counts so far.
func (m *awsMeter) snapshot() meterCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.c
	c.Requests, c.Errors, c.Units = maps.Clone(c.Requests), maps.Clone(c.Errors), maps.Clone(c.Units)
	return c
}

// sub returns c minus an earlier snapshot.
func (c meterCounts) sub(earlier meterCounts) meterCounts { return c.plus(earlier, -1) }

// add returns c plus o.
func (c meterCounts) add(o meterCounts) meterCounts { return c.plus(o, 1) }

// plus returns c + sign·o.
func (c meterCounts) plus(o meterCounts, sign float64) meterCounts {
	out := newMeterCounts()
	for _, p := range []struct{ dst, a, b map[string]float64 }{
		{out.Requests, c.Requests, o.Requests}, {out.Errors, c.Errors, o.Errors}, {out.Units, c.Units, o.Units},
	} {
		for k, v := range p.a {
			p.dst[k] = v
		}
		for k, v := range p.b {
			if p.dst[k] += sign * v; p.dst[k] == 0 {
				delete(p.dst, k)
			}
		}
	}
	out.WriteUnits, out.ReadUnits = c.WriteUnits+sign*o.WriteUnits, c.ReadUnits+sign*o.ReadUnits
	out.EmptyReceives = c.EmptyReceives + sign*o.EmptyReceives
	out.QueryBytes = c.QueryBytes + sign*o.QueryBytes
	return out
}

// count sums the requests of one service ("dynamodb", "streams", "sqs").
func (c meterCounts) count(svc string) float64 {
	var n float64
	for k, v := range c.Requests {
		if strings.HasPrefix(k, svc+".") {
			n += v
		}
	}
	return n
}
