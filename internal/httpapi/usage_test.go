package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/berth-io/berth/internal/container"
	"github.com/berth-io/berth/internal/fsm"
	"github.com/berth-io/berth/internal/store/teststores"
)

// usageAnswer is GET /api/usage's body.
type usageAnswer struct {
	GroupBy string `json:"group_by"`
	Items   []struct {
		Key              string  `json:"key"`
		RunningSeconds   int64   `json:"running_seconds"`
		CPUSeconds       float64 `json:"cpu_seconds"`
		MemoryGiBSeconds float64 `json:"memory_gib_seconds"`
		Creates          int64   `json:"creates"`
		Failures         int64   `json:"failures"`
	} `json:"items"`
}

// wantUsageKeys checks the answer's group_by and its items' keys and
// creates.
func wantUsageKeys(groupBy string, keys []string, creates []int64) func(t *testing.T, a *api, r *resp) {
	return func(t *testing.T, _ *api, r *resp) {
		got := decode[usageAnswer](t, r)
		ok := got.GroupBy == groupBy && len(got.Items) == len(keys)
		for i := 0; ok && i < len(keys); i++ {
			ok = got.Items[i].Key == keys[i] && got.Items[i].Creates == creates[i] && got.Items[i].RunningSeconds >= 0
		}
		if !ok {
			t.Errorf("usage answered %+v, want group_by %s, keys %v with creates %v", got, groupBy, keys, creates)
		}
	}
}

// TestUsageRoute: a user reads their own usage, an admin anyone's and a
// team's; every bad parameter is a 400 naming it.
func TestUsageRoute(t *testing.T) {
	teststores.Each(t, func(t *testing.T, b teststores.Backend) {
		a := newQuotaAPI(t, b)
		for _, tok := range []string{alice, alice, carol} {
			in := decode[container.Instance](t, a.mustStatus(a.do("POST", "/api/containers", tok, create1, nil), http.StatusAccepted))
			a.drive(in.ID, fsm.Running)
		}
		hour := time.Now().UTC().Truncate(time.Hour)
		window := "from=" + url.QueryEscape(hour.Add(-time.Hour).Format(time.RFC3339)) + "&to=" + url.QueryEscape(hour.Add(2*time.Hour).Format(time.RFC3339))
		day := hour.Format(time.DateOnly)
		runQuotaSteps(t, a, []quotaStep{
			{name: "own, by day (default)", method: "GET", path: "/api/usage", token: alice, status: http.StatusOK,
				check: wantUsageKeys("day", []string{day}, []int64{2})},
			{name: "own, by owner", method: "GET", path: "/api/usage?group_by=owner&" + window, token: alice, status: http.StatusOK,
				check: wantUsageKeys("owner", []string{"alice"}, []int64{2})},
			{name: "own, named", method: "GET", path: "/api/usage?owner=alice&group_by=template", token: alice, status: http.StatusOK,
				check: wantUsageKeys("template", []string{"busybox"}, []int64{2})},
			{name: "nothing yet", method: "GET", path: "/api/usage", token: bob, status: http.StatusOK,
				check: wantUsageKeys("day", nil, nil)},
			{name: "another's", method: "GET", path: "/api/usage?owner=carol", token: alice, status: http.StatusForbidden},
			{name: "a team's", method: "GET", path: "/api/usage?team=data", token: alice, status: http.StatusForbidden},
			{name: "admin: carol's", method: "GET", path: "/api/usage?owner=carol&group_by=owner", token: admin, status: http.StatusOK,
				check: wantUsageKeys("owner", []string{"carol"}, []int64{1})},
			{name: "admin: the team's by owner", method: "GET", path: "/api/usage?team=data&group_by=owner&" + window, token: admin, status: http.StatusOK,
				check: wantUsageKeys("owner", []string{"alice", "carol"}, []int64{2, 1})},
			{name: "admin: the team's by team", method: "GET", path: "/api/usage?team=data&group_by=team", token: admin, status: http.StatusOK,
				check: wantUsageKeys("team", []string{"data"}, []int64{3})},
			{name: "from not a time", method: "GET", path: "/api/usage?from=yesterday", token: alice, status: http.StatusBadRequest, check: wantField("from")},
			{name: "from not a whole hour", method: "GET", path: "/api/usage?from=" + url.QueryEscape(hour.Add(-time.Minute).Format(time.RFC3339)), token: alice,
				status: http.StatusBadRequest, check: wantField("from")},
			{name: "to not after from", method: "GET", path: "/api/usage?from=" + url.QueryEscape(hour.Format(time.RFC3339)) + "&to=" + url.QueryEscape(hour.Format(time.RFC3339)),
				token: alice, status: http.StatusBadRequest, check: wantField("to")},
			{name: "span too long", method: "GET", path: "/api/usage?from=" + url.QueryEscape(hour.AddDate(-2, 0, 0).Format(time.RFC3339)), token: alice,
				status: http.StatusBadRequest, check: wantField("from")},
			{name: "group_by unknown", method: "GET", path: "/api/usage?group_by=week", token: alice, status: http.StatusBadRequest, check: wantField("group_by")},
			{name: "owner and team", method: "GET", path: "/api/usage?owner=alice&team=data", token: admin, status: http.StatusBadRequest, check: wantField("team")},
		})
	})
}
