package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/store/dynamostore"
	"github.com/berth-io/berth/internal/store/teststores"
)

// probe collects what one API request asks of DynamoDB: how many requests
// (SDK attempts included) and the last TransactWriteItems it sent.
type probe struct {
	calls atomic.Int64
	txn   atomic.Pointer[dynamodb.TransactWriteItemsInput]
}

type probeKey struct{}

// withProbe counts every DynamoDB request made with ctx in p.
func withProbe(ctx context.Context, p *probe) context.Context {
	return context.WithValue(ctx, probeKey{}, p)
}

// probeMiddleware feeds the probe of the request's context, if any. It sits
// in the Finalize step, after the retry middleware, so that each attempt
// the SDK sends is counted.
var probeMiddleware = func(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("berthProbeInput",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if p, ok := ctx.Value(probeKey{}).(*probe); ok {
				if txn, ok := in.Parameters.(*dynamodb.TransactWriteItemsInput); ok {
					p.txn.Store(txn)
				}
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After); err != nil {
		return err
	}
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("berthProbeCount",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			if p, ok := ctx.Value(probeKey{}).(*probe); ok {
				p.calls.Add(1)
			}
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}

// benchCreateVsTxn runs clients concurrent loops, each alternating an API
// create with bareTxn of the transaction that create sent, on one
// DynamoDB client, and reports both latencies, their ratios and the
// DynamoDB requests per create.
func benchCreateVsTxn(b *testing.B, clients int, idemKey bool) {
	client := dynamodb.New(teststores.DynamoClient(b).Options(), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, probeMiddleware)
	})
	prefix := fmt.Sprintf("bench%d-", time.Now().UnixNano()%1e9)
	ctx := context.Background()
	if err := dynamostore.EnsureTables(ctx, client, prefix, dynamostore.WithoutTTL()); err != nil {
		b.Fatalf("creating tables on DynamoDB Local: %v", err)
	}
	b.Cleanup(func() { _ = dynamostore.DeleteTables(context.Background(), client, prefix) })
	a, ev := benchSetup(b, dynamostore.New(client, dynamostore.Options{TablePrefix: prefix}))
	keys := newKeySchemas(client)

	var (
		apiLat, txnLat = make([]time.Duration, b.N), make([]time.Duration, b.N)
		next           atomic.Int64
		calls, retries atomic.Int64
		errMu          sync.Mutex
		firstErr       error
		wg             sync.WaitGroup
	)
	fail := func(err error) {
		errMu.Lock()
		defer errMu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range clients {
		wg.Go(func() {
			ev := ev
			ev.Headers = maps.Clone(ev.Headers) // each client sets its own key
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if idemKey {
					ev.Headers["idempotency-key"] = container.NewID()
				}
				p := &probe{}
				t0 := time.Now()
				resp, _ := a.Handle(withProbe(ctx, p), ev)
				apiLat[i] = time.Since(t0)
				calls.Add(p.calls.Load())
				if resp.StatusCode != http.StatusAccepted {
					fail(fmt.Errorf("create: %d %s", resp.StatusCode, resp.Body))
					return
				}
				sent := p.txn.Load()
				if sent == nil {
					fail(errors.New("the create sent no TransactWriteItems"))
					return
				}
				in, err := keys.fresh(ctx, sent)
				if err != nil {
					fail(err)
					return
				}
				t0 = time.Now()
				n, err := bareTxn(ctx, client, in)
				txnLat[i] = time.Since(t0)
				retries.Add(int64(n - 1))
				if err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	slices.Sort(apiLat)
	slices.Sort(txnLat)
	api50, api99, txn50, txn99 := pct(apiLat, 50), pct(apiLat, 99), pct(txnLat, 50), pct(txnLat, 99)
	b.ReportMetric(ms(api50), "api-p50-ms")
	b.ReportMetric(ms(api99), "api-p99-ms")
	b.ReportMetric(ms(txn50), "txn-p50-ms")
	b.ReportMetric(ms(txn99), "txn-p99-ms")
	b.ReportMetric(float64(api50)/float64(txn50), "p50-api/txn")
	b.ReportMetric(float64(api99)/float64(txn99), "p99-api/txn")
	b.ReportMetric(float64(calls.Load())/float64(b.N), "ddb-calls/create")
	b.ReportMetric(float64(retries.Load())/float64(b.N), "txn-retries/op")
}

// bareTxn sends in as it is, again with a fresh client request token after
// a transaction conflict (concurrent creates meet on the admission
// counter), and returns how many times it sent it.
func bareTxn(ctx context.Context, client *dynamodb.Client, in *dynamodb.TransactWriteItemsInput) (int, error) {
	for n := 1; ; n++ {
		in.ClientRequestToken = aws.String(container.NewID())
		_, err := client.TransactWriteItems(ctx, in)
		if err == nil {
			return n, nil
		}
		var tce *types.TransactionCanceledException
		var tc *types.TransactionConflictException
		conflict := errors.As(err, &tc)
		if errors.As(err, &tce) {
			for _, r := range tce.CancellationReasons {
				conflict = conflict || aws.ToString(r.Code) == "TransactionConflict"
			}
		}
		if !conflict || n >= 100 {
			return n, fmt.Errorf("bare TransactWriteItems: %w", err)
		}
	}
}

// keySchemas knows the key attributes of the tables a transaction writes.
type keySchemas struct {
	client *dynamodb.Client
	mu     sync.Mutex
	keys   map[string][]string
}

func newKeySchemas(client *dynamodb.Client) *keySchemas {
	return &keySchemas{client: client, keys: map[string][]string{}}
}

func (k *keySchemas) of(ctx context.Context, table string) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if names, ok := k.keys[table]; ok {
		return names, nil
	}
	out, err := k.client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", table, err)
	}
	var names []string
	for _, ks := range out.Table.KeySchema {
		names = append(names, aws.ToString(ks.AttributeName))
	}
	k.keys[table] = names
	return names, nil
}

// fresh returns a copy of sent that writes new items: every string key of
// an item it puts (instance, outbox item, event, idempotency record) is
// replaced by a new id wherever it occurs in the transaction. Updates keep
// their keys, so the copy takes a slot on the same admission counter.
func (k *keySchemas) fresh(ctx context.Context, sent *dynamodb.TransactWriteItemsInput) (*dynamodb.TransactWriteItemsInput, error) {
	var pairs []string
	for _, it := range sent.TransactItems {
		if it.Put == nil {
			continue
		}
		names, err := k.of(ctx, aws.ToString(it.Put.TableName))
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if s, ok := it.Put.Item[n].(*types.AttributeValueMemberS); ok && !slices.Contains(pairs, s.Value) {
				pairs = append(pairs, s.Value, container.NewID())
			}
		}
	}
	r := strings.NewReplacer(pairs...)
	out := &dynamodb.TransactWriteItemsInput{TransactItems: make([]types.TransactWriteItem, len(sent.TransactItems))}
	for i, it := range sent.TransactItems {
		var c types.TransactWriteItem
		switch {
		case it.Put != nil:
			p := *it.Put
			p.Item, p.ExpressionAttributeValues = renameMap(r, p.Item), renameMap(r, p.ExpressionAttributeValues)
			c.Put = &p
		case it.Update != nil:
			u := *it.Update
			u.Key, u.ExpressionAttributeValues = renameMap(r, u.Key), renameMap(r, u.ExpressionAttributeValues)
			c.Update = &u
		case it.Delete != nil:
			d := *it.Delete
			d.Key, d.ExpressionAttributeValues = renameMap(r, d.Key), renameMap(r, d.ExpressionAttributeValues)
			c.Delete = &d
		case it.ConditionCheck != nil:
			cc := *it.ConditionCheck
			cc.Key, cc.ExpressionAttributeValues = renameMap(r, cc.Key), renameMap(r, cc.ExpressionAttributeValues)
			c.ConditionCheck = &cc
		}
		out.TransactItems[i] = c
	}
	return out, nil
}

func renameMap(r *strings.Replacer, m map[string]types.AttributeValue) map[string]types.AttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = rename(r, v)
	}
	return out
}

func rename(r *strings.Replacer, v types.AttributeValue) types.AttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: r.Replace(v.Value)}
	case *types.AttributeValueMemberSS:
		ss := make([]string, len(v.Value))
		for i, s := range v.Value {
			ss[i] = r.Replace(s)
		}
		return &types.AttributeValueMemberSS{Value: ss}
	case *types.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: renameMap(r, v.Value)}
	case *types.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = rename(r, e)
		}
		return &types.AttributeValueMemberL{Value: l}
	}
	return v
}
