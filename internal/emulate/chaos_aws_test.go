package emulate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// DynamoDB faults the chaos proxy injects, as AWS answers them (the JSON
// 1.0 wire format of DynamoDB's errors), and the others it plays.
const (
	ddbThroughput = "ddb ProvisionedThroughputExceeded"
	ddbThrottling = "ddb Throttling"
	ddbInternal   = "ddb 500 InternalServerError"
	ddbLatency    = "ddb latency"
	ddbLostAnswer = "ddb answer lost"
	ddbTxConflict = "ddb TransactionConflict"
	sqsDupSend    = "sqs duplicate delivery"
	sqsLostDelete = "sqs delete lost (redelivery)"
	sqsReordered  = "sqs send delayed (reordering)"
)

// ddbErrors are the error answers, by fault.
var ddbErrors = map[string]struct {
	status      int
	typ, detail string
}{
	ddbThroughput: {http.StatusBadRequest, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
		"The level of configured provisioned throughput for the table was exceeded. Consider increasing your provisioning level with the UpdateTable API."},
	ddbThrottling: {http.StatusBadRequest, "com.amazon.coral.availability#ThrottlingException", "Rate of requests exceeds the allowed throughput."},
	ddbInternal:   {http.StatusInternalServerError, "com.amazonaws.dynamodb.v20120810#InternalServerError", "Internal server error"},
}

// chaosAWS is a loopback fault proxy between an emulated stack (its
// functions and its pollers, which are separate processes or the
// emulator's own clients) and DynamoDB Local and the SQS emulator: the
// faults are on the wire, outside berth's code. While on, each DynamoDB
// data-plane request (not DynamoDB Streams: the stream mapping is the
// emulator's part, not berth's) meets a fault with probability ddbRate:
// an error answer as AWS gives it (throttling, 500), latency, or a request
// that is carried out but whose answer is lost (the connection closes).
// Each SQS send is delivered twice with probability dupRate (SQS's
// at-least-once delivery) and delayed with probability dupRate/2 (its
// messages overtaken by later ones), and a delete is lost with probability
// lostDeleteRate (the message comes again after its visibility timeout).
type chaosAWS struct {
	ddbURL, sqsURL string

	mu                      sync.Mutex
	rng                     *rand.Rand
	on                      bool
	ddbRate, dupRate, lossP float64
	counts                  map[string]int
	ddbRequests             int // DynamoDB data-plane requests seen while on
	// storm raises the DynamoDB fault rate to stormRate: throttling comes
	// in bursts, longer than the SDK's own retries.
	storm bool
}

// stormRate is the share of DynamoDB requests that meet a fault during a
// storm.
const stormRate = 0.5

// setStorm starts or ends a storm.
func (c *chaosAWS) setStorm(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storm = on
}

func newChaosAWS(seed uint64, ddbRate, dupRate, lostDeleteRate float64) *chaosAWS {
	return &chaosAWS{rng: rand.New(rand.NewPCG(seed, 99)), ddbRate: ddbRate, dupRate: dupRate, lossP: lostDeleteRate, counts: map[string]int{}}
}

// wrap is setup.aws: it starts the two proxies in front of the stack's
// endpoints.
func (c *chaosAWS) wrap(t testing.TB) func(ddb, sqs string) (string, string) {
	return func(ddb, sqs string) (string, string) {
		c.ddbURL = serveProxy(t, ddb, c.dynamodb)
		c.sqsURL = serveProxy(t, sqs, c.sqs)
		return c.ddbURL, c.sqsURL
	}
}

// setOn turns the faults on or off.
func (c *chaosAWS) setOn(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = on
}

// figures returns the faults injected so far, by kind, and the DynamoDB
// requests seen while on.
func (c *chaosAWS) figures() (map[string]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out, c.ddbRequests
}

// roll decides one fault: kind "" is none. It counts what it decides.
func (c *chaosAWS) roll(p float64, kinds ...string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.on || c.rng.Float64() >= p {
		return ""
	}
	k := kinds[c.rng.IntN(len(kinds))]
	c.counts[k]++
	return k
}

func (c *chaosAWS) count(kind string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[kind] += n
}

// proxyCall is one request through a proxy: what the fault handler may
// forward (again) and answer.
type proxyCall struct {
	w       http.ResponseWriter
	r       *http.Request
	body    []byte
	forward func(body []byte) (status int, header http.Header, resp []byte, err error)
}

// relay forwards the request and writes the answer.
func (pc proxyCall) relay() (int, []byte) {
	status, header, resp, err := pc.forward(pc.body)
	if err != nil {
		http.Error(pc.w, err.Error(), http.StatusBadGateway)
		return 0, nil
	}
	for k, v := range header {
		pc.w.Header()[k] = v
	}
	pc.w.WriteHeader(status)
	_, _ = pc.w.Write(resp)
	return status, resp
}

// serveProxy runs one proxy to target; handle deals with each request.
func serveProxy(t testing.TB, target string, handle func(pc proxyCall)) string {
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
		forward := func(b []byte) (int, http.Header, []byte, error) {
			// Not the request's context: a forwarded request is carried out
			// even when its answer is then lost.
			out, err := http.NewRequest(r.Method, strings.TrimSuffix(target, "/")+r.URL.RequestURI(), bytes.NewReader(b)) //nolint:noctx // see above
			if err != nil {
				return 0, nil, nil, err
			}
			out.Header = r.Header.Clone()
			out.Header.Del("Content-Length")
			out.ContentLength = int64(len(b))
			resp, err := client.Do(out)
			if err != nil {
				return 0, nil, nil, err
			}
			defer resp.Body.Close()
			rb, err := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header, rb, err
		}
		handle(proxyCall{w: w, r: r, body: body, forward: forward})
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// dynamodb injects the DynamoDB faults.
func (c *chaosAWS) dynamodb(pc proxyCall) {
	target := pc.r.Header.Get("X-Amz-Target")
	if !strings.HasPrefix(target, "DynamoDB_20120810.") {
		pc.relay() // the control plane at start-up and the streams: no faults
		return
	}
	c.mu.Lock()
	if c.on {
		c.ddbRequests++
	}
	rate := c.ddbRate
	if c.storm {
		rate = stormRate
	}
	c.mu.Unlock()
	kinds := []string{ddbThroughput, ddbThroughput, ddbThrottling, ddbInternal, ddbLatency, ddbLostAnswer}
	if target == "DynamoDB_20120810.TransactWriteItems" {
		// A transaction also loses races with others on its items: the
		// fault DynamoDB answers most often to a busy table's transactions.
		kinds = append(kinds, ddbTxConflict, ddbTxConflict, ddbTxConflict)
	}
	switch kind := c.roll(rate, kinds...); kind {
	case "":
		pc.relay()
	case ddbTxConflict:
		c.mu.Lock()
		pick := c.rng.Uint64()
		c.mu.Unlock()
		body, ok := transactionConflict(pc.body, pick)
		if !ok {
			pc.relay() // not a transaction the proxy can read: no fault
			return
		}
		pc.w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		pc.w.Header().Set("X-Amzn-Requestid", fmt.Sprintf("CHAOS%d", time.Now().UnixNano()))
		pc.w.WriteHeader(http.StatusBadRequest)
		_, _ = pc.w.Write(body)
	case ddbLatency:
		c.mu.Lock()
		d := time.Duration(100+c.rng.IntN(900)) * time.Millisecond
		c.mu.Unlock()
		select {
		case <-time.After(d):
		case <-pc.r.Context().Done():
			return
		}
		pc.relay()
	case ddbLostAnswer:
		// Carried out, then the connection drops before the answer: the
		// client cannot tell whether its write happened.
		_, _, _, _ = pc.forward(pc.body)
		dropConnection(pc.w)
	default:
		e := ddbErrors[kind]
		body, _ := json.Marshal(map[string]string{"__type": e.typ, "message": e.detail})
		pc.w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		pc.w.Header().Set("X-Amzn-Requestid", fmt.Sprintf("CHAOS%d", time.Now().UnixNano()))
		pc.w.WriteHeader(e.status)
		_, _ = pc.w.Write(body)
	}
}

// transactionConflict is DynamoDB's answer to a TransactWriteItems request
// that another transaction beat to one of its items (nothing of it is
// written): a TransactionCanceledException whose CancellationReasons hold
// one reason per item of the request, in its order, "TransactionConflict"
// for the item picked and "None" for the others. ok is false when the
// request has no item to pick.
func transactionConflict(request []byte, pick uint64) (body []byte, ok bool) {
	var in struct{ TransactItems []json.RawMessage }
	if json.Unmarshal(request, &in) != nil || len(in.TransactItems) == 0 {
		return nil, false
	}
	conflicted := int(pick % uint64(len(in.TransactItems)))
	type reason struct {
		Code    string
		Message string `json:",omitempty"`
	}
	reasons, codes := make([]reason, len(in.TransactItems)), make([]string, len(in.TransactItems))
	for i := range reasons {
		reasons[i], codes[i] = reason{Code: "None"}, "None"
	}
	reasons[conflicted] = reason{Code: "TransactionConflict", Message: "Transaction is ongoing for the item"}
	codes[conflicted] = "TransactionConflict"
	body, err := json.Marshal(map[string]any{
		"__type":              "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
		"CancellationReasons": reasons,
		"Message":             "Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(codes, ", ") + "]",
	})
	return body, err == nil
}

// dropConnection closes the client's connection without an answer.
func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("the proxy's ResponseWriter cannot be hijacked")
	}
	conn, _, err := hj.Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// sqs injects the SQS faults: duplicate deliveries of sends, and lost
// deletes (answered as carried out, not forwarded).
func (c *chaosAWS) sqs(pc proxyCall) {
	action := strings.TrimPrefix(pc.r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	switch action {
	case "SendMessage", "SendMessageBatch":
		if c.roll(c.dupRate/2, sqsReordered) != "" {
			c.mu.Lock()
			d := 1 + c.rng.IntN(3)
			c.mu.Unlock()
			pc.body = delayed(pc.body, action, d)
		}
		status, _ := pc.relay()
		if status != http.StatusOK || c.roll(c.dupRate, sqsDupSend) == "" {
			return
		}
		// The same send again: every message of it is delivered twice.
		if st, _, _, err := pc.forward(pc.body); err == nil && st == http.StatusOK && action == "SendMessageBatch" {
			var in struct{ Entries []json.RawMessage }
			if json.Unmarshal(pc.body, &in) == nil && len(in.Entries) > 1 {
				c.count(sqsDupSend, len(in.Entries)-1)
			}
		}
	case "DeleteMessage", "DeleteMessageBatch":
		if c.roll(c.lossP, sqsLostDelete) == "" {
			pc.relay()
			return
		}
		resp := []byte(`{}`)
		if action == "DeleteMessageBatch" {
			var in struct {
				Entries []struct {
					ID string `json:"Id"`
				}
			}
			_ = json.Unmarshal(pc.body, &in)
			ok := []map[string]string{}
			for _, e := range in.Entries {
				ok = append(ok, map[string]string{"Id": e.ID})
			}
			c.count(sqsLostDelete, max(0, len(in.Entries)-1)) // every message of the batch comes again
			resp, _ = json.Marshal(map[string]any{"Successful": ok, "Failed": []any{}})
		}
		pc.w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		pc.w.WriteHeader(http.StatusOK)
		_, _ = pc.w.Write(resp)
	default:
		pc.relay()
	}
}

// delayed holds a send back 1-3 s more (DelaySeconds, per message of a
// batch), so that its messages arrive after ones sent later: SQS standard
// queues do not keep order. The sender's own delay (a worker's backoff
// before its next try) is kept and added to, never shortened, as SQS never
// delivers a message before its delay: overwriting it once turned a 60 s
// wait for an unreachable engine into 1-3 s, so the wait's retries climbed
// within one outage and its next try came minutes after the outage ended.
func delayed(body []byte, action string, delay int) []byte {
	var in map[string]any
	if json.Unmarshal(body, &in) != nil {
		return body
	}
	later := func(m map[string]any) {
		own, _ := m["DelaySeconds"].(float64) // JSON numbers
		m["DelaySeconds"] = min(int(own)+delay, sqsMaxDelaySeconds)
	}
	if action == "SendMessage" {
		later(in)
	} else if entries, ok := in["Entries"].([]any); ok {
		for _, e := range entries {
			if m, ok := e.(map[string]any); ok {
				later(m)
			}
		}
	}
	out, err := json.Marshal(in)
	if err != nil {
		return body
	}
	return out
}

// sqsMaxDelaySeconds is SQS's longest DelaySeconds.
const sqsMaxDelaySeconds = 900
