package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/identity"
	"github.com/berth-io/berth/internal/manager"
	"github.com/berth-io/berth/internal/store"
)

func fieldErr(field, msg string) []manager.FieldError {
	return []manager.FieldError{{Field: field, Message: msg}}
}

// instanceBody is an Instance as the API shows it: labels always an object.
func instanceBody(in container.Instance) container.Instance {
	if in.Labels == nil {
		in.Labels = map[string]string{}
	}
	return in
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

func writeInstance(w http.ResponseWriter, status int, in container.Instance) {
	w.Header().Set("ETag", etag(in.Version))
	writeJSON(w, status, instanceBody(in))
}

const maxIdempotencyKey = 64

func (h *handler) createContainer(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	var body struct {
		manager.CreateRequest
		OnBehalfOf     string `json:"on_behalf_of,omitempty"`
		OnBehalfOfTeam string `json:"on_behalf_of_team,omitempty"`
	}
	if err := decodeBody(r, h.bodyLimit, &body); err != nil {
		return err
	}
	req := body.CreateRequest
	c, err := actingFor(c, body.OnBehalfOf, body.OnBehalfOfTeam)
	if err != nil {
		return err
	}
	if slot, ok := r.Context().Value(callerSlotKey{}).(*identity.Caller); ok {
		*slot = c // the access log names the owner and the acting service
	}
	var idem *manager.Idempotency
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		if len(key) > maxIdempotencyKey || !printableASCII(key) {
			return &badRequest{msg: "Idempotency-Key must be 1-64 printable ASCII characters", fields: fieldErr("Idempotency-Key", "1-64 printable ASCII characters")}
		}
		canonical, _ := json.Marshal(body) // maps marshal sorted: same request, same hash
		sum := sha256.Sum256(canonical)
		idem = &manager.Idempotency{Key: key, Hash: hex.EncodeToString(sum[:]), Response: firstResponse}
	}
	res, err := h.m.CreateByTemplate(r.Context(), c, req, idem, RequestIDFrom(r.Context()))
	if err != nil {
		return err
	}
	if res.Replayed != nil {
		return replay(w, res.Replayed)
	}
	w.Header().Set("Location", containerPath(res.Instance.ID))
	writeInstance(w, http.StatusAccepted, res.Instance)
	return nil
}

func containerPath(id string) string { return "/api/containers/" + id }

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func (h *handler) getContainer(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	in, err := h.m.Get(r.Context(), c, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeInstance(w, http.StatusOK, in)
	return nil
}

// ifMatch parses If-Match: a version, quoted or not ("3", 3, W/"3"). "*"
// matches any current representation (RFC 9110, 13.1.1): the same as no
// condition, since a missing instance is 404 either way.
func ifMatch(r *http.Request) (*int64, error) {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" || v == "*" {
		return nil, nil
	}
	v = strings.Trim(strings.TrimPrefix(v, "W/"), `"`)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return nil, &badRequest{msg: "If-Match must be an instance version (its ETag)", fields: fieldErr("If-Match", "must be a version")}
	}
	return &n, nil
}

type lifecycleFunc func(ctx context.Context, c identity.Caller, id string, ifMatch *int64, requestID string) (manager.Result, error)

// lifecycle serves start, stop and delete; noWorkStatus answers a request
// that needed no new work (stop of a stopped container: 200).
func (h *handler) lifecycle(fn lifecycleFunc, noWorkStatus int) apiFunc {
	return func(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
		im, err := ifMatch(r)
		if err != nil {
			return err
		}
		res, err := fn(r.Context(), c, r.PathValue("id"), im, RequestIDFrom(r.Context()))
		if err != nil {
			return err
		}
		status := http.StatusAccepted
		if !res.Enqueued {
			status = noWorkStatus
		}
		writeInstance(w, status, res.Instance)
		return nil
	}
}

func (h *handler) startContainer(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	return h.lifecycle(h.m.Start, http.StatusAccepted)(w, r, c)
}

func (h *handler) stopContainer(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	return h.lifecycle(h.m.Stop, http.StatusOK)(w, r, c)
}

func (h *handler) deleteContainer(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	return h.lifecycle(h.m.Delete, http.StatusAccepted)(w, r, c)
}

func (h *handler) listContainers(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	q := r.URL.Query()
	var bad []manager.FieldError
	lq := store.ListQuery{Template: q.Get("template"), Group: q.Get("group")}
	for _, s := range q["status"] {
		for _, part := range strings.Split(s, ",") {
			st := fsm.Status(strings.TrimSpace(part))
			if !st.Valid() {
				bad = append(bad, manager.FieldError{Field: "status", Message: "unknown status " + strconv.Quote(string(st))})
			}
			lq.Statuses = append(lq.Statuses, st)
		}
	}
	for _, l := range q["label"] {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			bad = append(bad, manager.FieldError{Field: "label", Message: "must be key=value"})
			continue
		}
		if lq.Labels == nil {
			lq.Labels = map[string]string{}
		}
		lq.Labels[k] = v
	}
	if owner := q.Get("owner"); owner != "" {
		if !c.Admin && owner != c.User {
			return &badRequest{msg: "only admins may list other users' containers", fields: fieldErr("owner", "must be your own user unless you are an admin")}
		}
		lq.Owner = owner
	} else if !c.Admin {
		lq.Owner = c.User
	}
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		bad = append(bad, manager.FieldError{Field: "limit", Message: err.Error()})
	}
	lq.Limit = limit
	if len(bad) > 0 {
		return &badRequest{msg: "invalid query parameters", fields: bad}
	}
	scope := cursorScope{User: c.User, Kind: "containers", Filter: filterDigest(lq)}
	if lq.Cursor, err = decodeCursor(q.Get("cursor"), scope); err != nil {
		return err
	}
	page, err := h.m.List(r.Context(), c, lq)
	if err != nil {
		return err
	}
	items := make([]container.Instance, len(page.Items))
	for i, in := range page.Items {
		items[i] = instanceBody(in)
	}
	writeJSON(w, http.StatusOK, listBody[container.Instance]{Items: items, NextCursor: encodeCursor(page.NextCursor, scope)})
	return nil
}

type listBody[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

func parseLimit(s string) (int, error) {
	if s == "" {
		return 50, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 100 {
		return 0, errors.New("must be an integer 1-100")
	}
	return n, nil
}

func (h *handler) listEvents(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	q := r.URL.Query()
	limit, err := parseLimit(q.Get("limit"))
	if err != nil {
		return &badRequest{msg: "invalid query parameters", fields: fieldErr("limit", err.Error())}
	}
	id := r.PathValue("id")
	scope := cursorScope{User: c.User, Kind: "events", Filter: id}
	cursor, err := decodeCursor(q.Get("cursor"), scope)
	if err != nil {
		return err
	}
	page, err := h.m.Events(r.Context(), c, id, cursor, limit)
	if err != nil {
		return err
	}
	items := page.Items
	if items == nil {
		items = []container.Event{}
	}
	writeJSON(w, http.StatusOK, listBody[container.Event]{Items: items, NextCursor: encodeCursor(page.NextCursor, scope)})
	return nil
}

func (h *handler) waitContainer(w http.ResponseWriter, r *http.Request, c identity.Caller) error {
	q := r.URL.Query()
	want := fsm.Status(q.Get("status"))
	var bad []manager.FieldError
	if !want.Valid() {
		bad = append(bad, manager.FieldError{Field: "status", Message: "must be one of the instance statuses"})
	}
	timeout := 20 * time.Second
	if s := q.Get("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > h.waitMax {
			bad = append(bad, manager.FieldError{Field: "timeout", Message: "must be a duration such as 20s, at most " + h.waitMax.String()})
		}
		timeout = d
	}
	if timeout > h.waitMax {
		timeout = h.waitMax
	}
	if len(bad) > 0 {
		return &badRequest{msg: "invalid query parameters", fields: bad}
	}
	release, err := h.waiters.acquire(c.User)
	if err != nil {
		return err
	}
	defer release()
	in, err := h.m.Wait(r.Context(), c, r.PathValue("id"), want, timeout)
	if errors.Is(err, manager.ErrUnreachable) {
		st := in.Status
		r = r.WithContext(context.WithValue(r.Context(), currentStatusKey{}, &st))
		h.writeError(w, r, err)
		return nil
	}
	if err != nil {
		return err
	}
	writeInstance(w, http.StatusOK, in)
	return nil
}
