package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
)

// cursorScope binds a page cursor to who asked and what they asked for: a
// cursor reused by another user or with other filters is refused (400)
// instead of silently paging through a different listing.
type cursorScope struct {
	User   string `json:"u"`
	Kind   string `json:"k"`
	Filter string `json:"f"`
}

type cursorDoc struct {
	cursorScope
	Store string `json:"c"`
}

func encodeCursor(storeCursor string, scope cursorScope) string {
	if storeCursor == "" {
		return ""
	}
	b, _ := json.Marshal(cursorDoc{cursorScope: scope, Store: storeCursor})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string, scope cursorScope) (string, error) {
	if s == "" {
		return "", nil
	}
	bad := &badRequest{msg: "cursor is not valid for this listing: it belongs to another user or other filters, or is malformed",
		fields: []manager.FieldError{{Field: "cursor", Message: "not valid for this listing"}}}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", bad
	}
	var doc cursorDoc
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Store == "" || doc.cursorScope != scope {
		return "", bad
	}
	return doc.Store, nil
}

// filterDigest identifies a listing's filters (not its cursor or limit:
// the page size may change between pages).
func filterDigest(q store.ListQuery) string {
	statuses := slices.Clone(q.Statuses)
	slices.Sort(statuses)
	statuses = slices.Compact(statuses)
	labels := make([]string, 0, len(q.Labels))
	for k, v := range q.Labels {
		labels = append(labels, k+"="+v)
	}
	slices.Sort(labels)
	b, _ := json.Marshal(struct {
		Owner    string
		Statuses []fsm.Status
		Template string
		Group    string
		Labels   string
	}{q.Owner, statuses, q.Template, q.Group, strings.Join(labels, "\x00")})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
