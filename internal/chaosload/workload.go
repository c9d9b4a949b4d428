package chaosload

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
)

// user is one API user with what it knows.
type user struct {
	User
	rng        *rand.Rand
	n          int             // creates sent, for their idempotency keys
	live       []string        // instances not asked to be deleted
	member     map[string]bool // instances berth may delete by itself (a group's reset or newer member, a retention)
	unsure     map[string]bool // deletes whose answer was lost
	brief      map[string]bool // instances of Templates.Brief: left alone half the time, so that berth acts first
	lastCreate *createCall     // the last accepted keyed create, to repeat
}

// createCall is one create as sent, to repeat with its Idempotency-Key.
type createCall struct {
	key  string
	body map[string]any
	id   string
}

// step is one operation of u: mostly what a user does with its instances,
// now and then something the API must refuse cleanly.
func (r *Run) step(u *user) {
	roll := u.rng.IntN(100)
	room := len(u.live) < r.o.MaxLive
	switch {
	case len(u.live) == 0 || (roll < 14 && room):
		t := r.o.Templates
		tpl := []string{t.Long, t.Long, t.Long, t.Long, t.Long, t.Long, t.Long, t.Brief, t.Quick, t.Bad}[u.rng.IntN(10)]
		if tpl == "" {
			tpl = t.Long
		}
		r.create(u, map[string]any{"template": tpl})
	case r.o.Groups && roll < 26 && room:
		// A member of one of the user's groups; a newer member of the same
		// name deletes the older ones.
		g := fmt.Sprintf("%s-dag%d", u.Name, u.rng.IntN(2))
		r.create(u, map[string]any{"template": r.o.Templates.Long, "group": g, "name": []string{"node-a", "node-b", "node-c"}[u.rng.IntN(3)]})
	case r.o.Keys && roll < 30 && u.lastCreate != nil:
		r.replay(u)
	case r.o.Groups && roll < 34:
		r.groupOp(u, "finish")
	case r.o.Groups && roll < 37:
		r.groupOp(u, "reset")
	case roll >= 88:
		r.glance(u)
	default:
		r.instanceOp(u)
	}
}

// create sends a create; with Options.Keys, under a new Idempotency-Key,
// sent again with the same key while the answer is a fault's (a 5xx or
// none).
func (r *Run) create(u *user, body map[string]any) {
	u.n++
	c := &createCall{body: body}
	tries := 1
	if r.o.Keys {
		c.key, tries = fmt.Sprintf("%s-%d-%d", u.Name, r.o.Seed%1000000, u.n), 8
	}
	for range tries {
		a, err := r.o.Call(http.MethodPost, "/api/containers", u.Token, body, c.key)
		ok := r.answered(u, "create", a, err, http.StatusAccepted, http.StatusTooManyRequests)
		if ok && a.Status == http.StatusAccepted {
			var in container.Instance
			if err := json.Unmarshal(a.Body, &in); err != nil || in.ID == "" {
				r.note("create answered 202 without an instance: %s", a.Body)
				return
			}
			c.id = in.ID
			if r.o.Keys {
				u.lastCreate = c
			}
			u.live = append(u.live, in.ID)
			if body["template"] == r.o.Templates.Brief && r.o.Templates.Brief != "" {
				u.member[in.ID], u.brief[in.ID] = true, true
			}
			if body["group"] != nil {
				u.member[in.ID] = true
			}
			r.accept("create", u.Name, in.ID)
			r.mu.Lock()
			r.templates[in.ID], _ = body["template"].(string)
			r.mu.Unlock()
			return
		}
		if ok || (err == nil && a.Status < 500) {
			return // an answer: 429 (the queue is full) or one outside the contract, recorded
		}
		pause(u)
	}
}

// replay repeats the last accepted create with its key and body: the same
// instance, whatever happened to it since (while the key is remembered).
func (r *Run) replay(u *user) {
	c := u.lastCreate
	a, err := r.o.Call(http.MethodPost, "/api/containers", u.Token, c.body, c.key)
	if !r.answered(u, "replay", a, err, http.StatusAccepted) {
		return
	}
	var in container.Instance
	if err := json.Unmarshal(a.Body, &in); err != nil || in.ID != c.id {
		r.note("create repeated with key %s: instance %q, want %s (%s)", c.key, in.ID, c.id, a.Body)
		return
	}
	r.mu.Lock()
	r.replays++
	r.mu.Unlock()
}

// groupOp finishes or resets one of the user's groups.
func (r *Run) groupOp(u *user, op string) {
	g := fmt.Sprintf("%s-dag%d", u.Name, u.rng.IntN(2))
	var body any
	if op == "finish" {
		body = map[string]string{"outcome": []string{"succeeded", "failed", "cancelled"}[u.rng.IntN(3)]}
	}
	a, err := r.o.Call(http.MethodPost, "/api/groups/"+g+"/"+op, u.Token, body, "")
	if !r.answered(u, op, a, err, http.StatusAccepted) {
		return
	}
	var res container.GroupResult
	if err := json.Unmarshal(a.Body, &res); err != nil {
		r.note("%s %s: %v: %s", op, g, err, a.Body)
		return
	}
	if op != "reset" {
		return
	}
	// Every member the reset answered for is to be deleted.
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range res.Members {
		r.deleted[m.ID] = true
		if _, ok := r.owners[m.ID]; !ok {
			r.owners[m.ID] = u.Name
		}
		u.live = slices.DeleteFunc(u.live, func(s string) bool { return s == m.ID })
	}
}

// opsByStatus is what a user asks of an instance in each status ("look":
// the GET was it; "wait" becomes "look" without Options.Waits).
var opsByStatus = map[fsm.Status][]string{
	fsm.Running: {"stop", "stop", "start", "delete", "wait", "pause", "pause"}, fsm.Stopped: {"start", "start", "start", "delete"}, fsm.Failed: {"delete"},
	fsm.Paused:  {"resume", "resume", "stop", "delete", "pause", "start"},
	fsm.Pending: {"wait", "look", "delete"}, fsm.Creating: {"wait", "look", "delete"},
}

// instanceOp is what a user asks of one of its instances, mostly what its
// status allows, now and then anything (which the API must refuse cleanly).
func (r *Run) instanceOp(u *user) {
	id := u.live[u.rng.IntN(len(u.live))]
	if u.brief[id] && u.rng.IntN(2) == 0 {
		r.glance(u)
		return
	}
	p := "/api/containers/" + id
	// A group member may be deleted by a reset or a newer member; a delete
	// whose answer was lost may have happened.
	gone := []int{}
	if u.member[id] || u.unsure[id] {
		gone = append(gone, http.StatusNotFound)
	}
	a, err := r.o.Call(http.MethodGet, p, u.Token, nil, "")
	if !r.answered(u, "get", a, err, append(gone, http.StatusOK)...) {
		return
	}
	if a.Status == http.StatusNotFound {
		u.live = slices.DeleteFunc(u.live, func(s string) bool { return s == id })
		return
	}
	var in container.Instance
	if err := json.Unmarshal(a.Body, &in); err != nil {
		r.note("get %s: %v: %s", id, err, a.Body)
		return
	}
	ops := opsByStatus[in.Status]
	if len(ops) == 0 || u.rng.IntN(6) == 0 {
		ops = []string{"start", "stop", "delete", "wait", "pause", "resume"}
	}
	op := ops[u.rng.IntN(len(ops))]
	if op == "wait" && !r.o.Waits {
		op = "look"
	}
	switch op {
	case "look":
	case "start", "stop", "pause", "resume":
		a, err := r.o.Call(http.MethodPost, p+"/"+op, u.Token, nil, "")
		want := append(slices.Clone(gone), http.StatusAccepted, http.StatusOK, http.StatusConflict)
		if op == "start" && r.o.Quotas {
			want = append(want, http.StatusTooManyRequests) // over the running quota
		}
		if r.answered(u, op, a, err, want...) && a.Status == http.StatusAccepted {
			r.accept(op, u.Name, id)
			if (op == "pause" || op == "resume") && u.rng.IntN(2) == 0 {
				// At once, so that the pause races a stop or a delete.
				r.raceAfterPause(u, id, gone)
			}
		}
	case "delete":
		r.deleteOf(u, id, gone)
	case "wait":
		want := []fsm.Status{fsm.Running, fsm.Stopped}[u.rng.IntN(2)]
		a, err := r.o.Call(http.MethodGet, p+"/wait?status="+string(want)+"&timeout=2s", u.Token, nil, "")
		r.answered(u, "wait", a, err, append(gone, http.StatusOK, http.StatusRequestTimeout, http.StatusConflict)...)
	}
}

// glance is what a user does without an instance in mind: list its own
// instances (only its own) or a group's, or look for another user's.
func (r *Run) glance(u *user) {
	switch x := u.rng.IntN(3); {
	case x == 1 && r.o.Peeks:
		r.peek(u)
		return
	case x == 0 && r.o.Groups:
		r.list(u, fmt.Sprintf("/api/groups/%s-dag%d", u.Name, u.rng.IntN(2)))
	default:
		r.list(u, "/api/containers?limit=100")
	}
}

func (r *Run) list(u *user, path string) {
	a, err := r.o.Call(http.MethodGet, path, u.Token, nil, "")
	// A group none of whose members is left is not found.
	if !r.answered(u, "list", a, err, http.StatusOK, http.StatusNotFound) || a.Status != http.StatusOK {
		return
	}
	var page struct {
		Items   []container.Instance
		Members []container.Instance
	}
	if err := json.Unmarshal(a.Body, &page); err != nil {
		r.note("list %s: %v: %s", path, err, a.Body)
		return
	}
	for _, in := range append(page.Items, page.Members...) {
		if in.Owner != u.Name {
			r.note("%s's list %s shows %s's instance %s", u.Name, path, in.Owner, in.ID)
		}
	}
}

// peek asks for another user's instance: it is not there for u (404,
// never 403).
func (r *Run) peek(u *user) {
	r.mu.Lock()
	var others []string
	for id, owner := range r.owners {
		if owner != u.Name {
			others = append(others, id)
		}
	}
	r.mu.Unlock()
	if len(others) == 0 {
		return
	}
	slices.Sort(others)
	a, err := r.o.Call(http.MethodGet, "/api/containers/"+others[u.rng.IntN(len(others))], u.Token, nil, "")
	r.answered(u, "peek", a, err, http.StatusNotFound)
}

// answered records one answer (or its absence); it reports whether it is
// one of want. An honest 5xx (Options.Honest) is counted under its class
// and is no answer to the operation; any other answer outside want is
// recorded as unexpected.
func (r *Run) answered(u *user, op string, a Answer, err error, want ...int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if err != nil {
		r.byClass["unanswered"]++
		return false
	}
	if a.Status >= 500 && r.o.Honest != nil {
		if class := r.o.Honest(a); class != "" {
			r.byClass[class]++
			r.byStatus[op+" "+class]++
			return false
		}
	}
	r.byClass[fmt.Sprintf("%dxx", a.Status/100)]++
	r.byStatus[fmt.Sprintf("%s %d", op, a.Status)]++
	if !slices.Contains(want, a.Status) {
		r.unexpected = append(r.unexpected, fmt.Sprintf("%s as %s: %d %s", op, u.Name, a.Status, a.Body))
		return false
	}
	return true
}

func (r *Run) accept(op, owner, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acceptedN++
	if _, ok := r.accepted[id]; !ok {
		r.accepted[id] = op
	}
	r.owners[id] = owner
}

// pause is a client's delay before it sends a create again.
func pause(u *user) {
	time.Sleep(time.Duration(200+u.rng.IntN(300)) * time.Millisecond) // a client's retry delay, not a wait for a result
}

// raceAfterPause sends a stop or a delete right behind an accepted pause or
// resume of id, before its worker has carried it out.
func (r *Run) raceAfterPause(u *user, id string, gone []int) {
	p := "/api/containers/" + id
	if u.rng.IntN(2) == 0 {
		a, err := r.o.Call(http.MethodPost, p+"/stop", u.Token, nil, "")
		if r.answered(u, "stop", a, err, append(gone, http.StatusAccepted, http.StatusOK, http.StatusConflict)...) && a.Status == http.StatusAccepted {
			r.accept("stop", u.Name, id)
		}
		return
	}
	r.deleteOf(u, id, gone)
}

// deleteOf asks for id's delete; gone are the answers that say it was
// already deleted.
func (r *Run) deleteOf(u *user, id string, gone []int) {
	a, err := r.o.Call(http.MethodDelete, "/api/containers/"+id, u.Token, nil, "")
	if err != nil || a.Status >= 500 {
		u.unsure[id] = true
	}
	if r.answered(u, "delete", a, err, append(gone, http.StatusAccepted, http.StatusConflict)...) && a.Status == http.StatusAccepted {
		u.live = slices.DeleteFunc(u.live, func(s string) bool { return s == id })
		r.accept("delete", u.Name, id)
		r.mu.Lock()
		r.deleted[id] = true
		r.mu.Unlock()
	}
}
