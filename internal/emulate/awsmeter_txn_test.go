package emulate_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"unicode"
)

// localDynamoDB reads DynamoDB Local directly (not through the meter, so
// uncounted): what a transaction's items were before and after it, and
// the tables' key schemas, to price the transaction as AWS does: each item
// 2 write units per KB (rounded up) of the larger of its two images, and 2
// more per KB of each global secondary index entry it writes (an entry that
// moves to another key is a delete and a put).
type localDynamoDB struct {
	url    string
	client *http.Client

	mu     sync.Mutex
	tables map[string]*tableSchema
}

// tableSchema is what pricing an item's writes needs of its table.
type tableSchema struct {
	keys    []string
	indexes []indexSchema
}

type indexSchema struct {
	name       string
	keys       []string
	projection string   // ALL, KEYS_ONLY, INCLUDE
	include    []string // INCLUDE's NonKeyAttributes
}

// txnImages are a transaction's items with their images before it.
type txnImages struct {
	items []txnItem
}

type txnItem struct {
	table  string
	key    map[string]json.RawMessage
	before map[string]json.RawMessage // nil: no such item
	put    map[string]json.RawMessage // a Put's item (its after image)
	check  bool                       // a ConditionCheck: nothing written
}

// call sends one DynamoDB request to Local.
func (l *localDynamoDB) call(action string, body any) ([]byte, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, l.url, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+action)
	// DynamoDB Local reads the credential's scope but checks no signature.
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=berth/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0")
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %d %s", action, resp.StatusCode, out)
	}
	return out, nil
}

// schema returns a table's key schema, read once.
func (l *localDynamoDB) schema(table string) *tableSchema {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.tables[table]; ok {
		return s
	}
	raw, err := l.call("DescribeTable", map[string]string{"TableName": table})
	if err != nil {
		return nil
	}
	type keyElem struct{ AttributeName string }
	var d struct {
		Table struct {
			KeySchema              []keyElem
			GlobalSecondaryIndexes []struct {
				IndexName  string
				KeySchema  []keyElem
				Projection struct {
					ProjectionType   string
					NonKeyAttributes []string
				}
			}
		}
	}
	if json.Unmarshal(raw, &d) != nil {
		return nil
	}
	s := &tableSchema{}
	for _, k := range d.Table.KeySchema {
		s.keys = append(s.keys, k.AttributeName)
	}
	for _, g := range d.Table.GlobalSecondaryIndexes {
		ix := indexSchema{name: g.IndexName, projection: g.Projection.ProjectionType, include: g.Projection.NonKeyAttributes}
		for _, k := range g.KeySchema {
			ix.keys = append(ix.keys, k.AttributeName)
		}
		s.indexes = append(s.indexes, ix)
	}
	if l.tables == nil {
		l.tables = map[string]*tableSchema{}
	}
	l.tables[table] = s
	return s
}

// get reads an item (strongly consistent); nil when there is none.
func (l *localDynamoDB) get(table string, key map[string]json.RawMessage) map[string]json.RawMessage {
	raw, err := l.call("GetItem", map[string]any{"TableName": table, "Key": key, "ConsistentRead": true})
	if err != nil {
		return nil
	}
	var out struct{ Item map[string]json.RawMessage }
	_ = json.Unmarshal(raw, &out)
	return out.Item
}

// before reads the images of a TransactWriteItems request's items.
func (l *localDynamoDB) before(req []byte) *txnImages {
	var in struct {
		TransactItems []map[string]struct {
			TableName string
			Key       map[string]json.RawMessage
			Item      map[string]json.RawMessage
		}
	}
	if json.Unmarshal(req, &in) != nil {
		return nil
	}
	t := &txnImages{}
	for _, ti := range in.TransactItems {
		for op, x := range ti {
			it := txnItem{table: x.TableName, key: x.Key, check: op == "ConditionCheck"}
			if op == "Put" {
				it.put = x.Item
				if s := l.schema(x.TableName); s != nil {
					it.key = map[string]json.RawMessage{}
					for _, k := range s.keys {
						it.key[k] = x.Item[k]
					}
				}
			}
			it.before = l.get(x.TableName, it.key)
			t.items = append(t.items, it)
		}
	}
	return t
}

// txnUnits prices a committed transaction: write units per "table" and
// "table/index" (without prefix).
func (l *localDynamoDB) txnUnits(t *txnImages, prefix string) map[string]float64 {
	out := map[string]float64{}
	for _, it := range t.items {
		name := strings.TrimPrefix(it.table, prefix)
		after := it.put
		if after == nil && !it.check {
			after = l.get(it.table, it.key)
		}
		if it.check {
			// A ConditionCheck is billed as a transactional write of the
			// item it reads.
			out[name] += 2 * kb(itemSize(it.before))
			continue
		}
		out[name] += 2 * kb(max(itemSize(it.before), itemSize(after)))
		s := l.schema(it.table)
		if s == nil {
			continue
		}
		for _, ix := range s.indexes {
			in := func(img map[string]json.RawMessage) bool {
				if img == nil {
					return false
				}
				for _, k := range ix.keys {
					if _, ok := img[k]; !ok {
						return false
					}
				}
				return true
			}
			entry := func(img map[string]json.RawMessage) float64 { return kb(itemSize(project(img, s, ix))) }
			switch b, a := in(it.before), in(after); {
			case b && a && sameKeys(it.before, after, ix.keys):
				if !bytes.Equal(canon(project(it.before, s, ix)), canon(project(after, s, ix))) {
					out[name+"/"+ix.name] += 2 * max(entry(it.before), entry(after))
				}
			case b && a: // moved: a delete and a put
				out[name+"/"+ix.name] += 2 * (entry(it.before) + entry(after))
			case b:
				out[name+"/"+ix.name] += 2 * entry(it.before)
			case a:
				out[name+"/"+ix.name] += 2 * entry(after)
			}
		}
	}
	return out
}

// failedWriteUnits prices a single-item write whose condition failed: AWS
// bills it 1 unit per KB of the item as it is (at least one).
func (l *localDynamoDB) failedWriteUnits(req []byte, prefix string) map[string]float64 {
	var in struct {
		TableName string
		Key, Item map[string]json.RawMessage
	}
	if json.Unmarshal(req, &in) != nil {
		return nil
	}
	key := in.Key
	if key == nil {
		s := l.schema(in.TableName)
		if s == nil {
			return nil
		}
		key = map[string]json.RawMessage{}
		for _, k := range s.keys {
			key[k] = in.Item[k]
		}
	}
	return map[string]float64{strings.TrimPrefix(in.TableName, prefix): kb(itemSize(l.get(in.TableName, key)))}
}

func sameKeys(a, b map[string]json.RawMessage, keys []string) bool {
	for _, k := range keys {
		if !bytes.Equal(canon(a[k]), canon(b[k])) {
			return false
		}
	}
	return true
}

// canon is a value's JSON with its object keys sorted.
func canon(v any) []byte {
	var x any
	raw, _ := json.Marshal(v)
	_ = json.Unmarshal(raw, &x)
	out, _ := json.Marshal(x)
	return out
}

// project is the index entry of an item.
func project(img map[string]json.RawMessage, s *tableSchema, ix indexSchema) map[string]json.RawMessage {
	if img == nil || ix.projection == "ALL" || ix.projection == "" {
		return img
	}
	out := map[string]json.RawMessage{}
	for _, k := range append(append(append([]string{}, s.keys...), ix.keys...), ix.include...) {
		if v, ok := img[k]; ok {
			out[k] = v
		}
	}
	return out
}

// kb is an item's size in write units' 1 KB steps (at least one).
func kb(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

// itemSize is an item's size as DynamoDB counts it: each attribute's name
// and value (strings and binaries by their bytes, numbers about one byte
// per two digits plus one, containers 3 bytes plus a byte per element).
func itemSize(img map[string]json.RawMessage) int {
	n := 0
	for name, v := range img {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(raw json.RawMessage) int {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return 0
	}
	for typ, x := range v {
		switch typ {
		case "S":
			var s string
			_ = json.Unmarshal(x, &s)
			return len(s)
		case "N":
			var s string
			_ = json.Unmarshal(x, &s)
			return numberSize(s)
		case "B":
			var s string
			_ = json.Unmarshal(x, &s)
			b, _ := base64.StdEncoding.DecodeString(s)
			return len(b)
		case "BOOL", "NULL":
			return 1
		case "SS", "NS", "BS":
			var ss []string
			_ = json.Unmarshal(x, &ss)
			n := 0
			for _, s := range ss {
				switch typ {
				case "NS":
					n += numberSize(s)
				case "BS":
					b, _ := base64.StdEncoding.DecodeString(s)
					n += len(b)
				default:
					n += len(s)
				}
			}
			return n
		case "L":
			var l []json.RawMessage
			_ = json.Unmarshal(x, &l)
			n := 3
			for _, e := range l {
				n += 1 + valueSize(e)
			}
			return n
		case "M":
			var m map[string]json.RawMessage
			_ = json.Unmarshal(x, &m)
			n := 3
			for k, e := range m {
				n += 1 + len(k) + valueSize(e)
			}
			return n
		}
	}
	return 0
}

// numberSize: one byte per two significant digits, plus one.
func numberSize(s string) int {
	digits := strings.TrimLeft(strings.Map(func(r rune) rune {
		if unicode.IsDigit(r) {
			return r
		}
		return -1
	}, strings.SplitN(strings.ToLower(s), "e", 2)[0]), "0")
	return (len(digits)+1)/2 + 1
}
