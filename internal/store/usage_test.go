package store

import (
	"errors"
	"testing"
	"time"
)

// TestUsageKeyRoundTrip: any owner, team or template name, the separator
// and escapes included, survives its bucket key.
func TestUsageKeyRoundTrip(t *testing.T) {
	for _, k := range []UsageKey{
		{Owner: "alice", Team: "data", Template: "busybox"},
		{Owner: "a|b", Team: "", Template: "50%+x y"},
		{Owner: "ü/é", Team: "|", Template: "%7C"},
	} {
		got, err := ParseUsageKey(k.String())
		if err != nil || got != k {
			t.Errorf("ParseUsageKey(%q) = %+v, %v; want %+v", k.String(), got, err, k)
		}
	}
	if _, err := ParseUsageKey("no-separators"); err == nil {
		t.Error("ParseUsageKey of a key without separators: no error")
	}
}

// TestByteSecondsAdd: sums past int64's range stay exact, and negative
// amounts (a bucket's correction for the part after now) borrow.
func TestByteSecondsAdd(t *testing.T) {
	tests := []struct {
		adds []int64
		want ByteSeconds
	}{
		{[]int64{gib + 5}, ByteSeconds{GiB: 1, Rest: 5}},
		{[]int64{10, -15}, ByteSeconds{GiB: -1, Rest: gib - 5}},
		{[]int64{-3 * gib}, ByteSeconds{GiB: -3}},
		{[]int64{1<<62 + 7, 1<<62 + 7, 1<<62 + 7}, ByteSeconds{GiB: 3 << 32, Rest: 21}},
	}
	for _, tc := range tests {
		var b ByteSeconds
		for _, n := range tc.adds {
			b.Add(n)
		}
		if b != tc.want {
			t.Errorf("adding %v = %+v, want %+v", tc.adds, b, tc.want)
		}
	}
}

// TestUsageQueryCheck: each bad query names its field.
func TestUsageQueryCheck(t *testing.T) {
	now := time.Date(2026, 12, 5, 8, 30, 0, 0, time.UTC)
	hour := now.Truncate(time.Hour)
	alice := QuotaSubject{Kind: QuotaUser, Name: "alice"}
	tests := []struct {
		name  string
		q     UsageQuery
		field string
	}{
		{"valid", UsageQuery{Subject: alice, From: hour.Add(-time.Hour), To: hour.Add(time.Hour), GroupBy: UsageByDay}, ""},
		{"no owner", UsageQuery{Subject: QuotaSubject{Kind: QuotaUser}, From: hour, To: hour.Add(time.Hour), GroupBy: UsageByDay}, "owner"},
		{"no team", UsageQuery{Subject: QuotaSubject{Kind: QuotaTeam}, From: hour, To: hour.Add(time.Hour), GroupBy: UsageByDay}, "team"},
		{"group_by", UsageQuery{Subject: alice, From: hour, To: hour.Add(time.Hour), GroupBy: "week"}, "group_by"},
		{"from off the hour", UsageQuery{Subject: alice, From: now, To: hour.Add(time.Hour), GroupBy: UsageByDay}, "from"},
		{"to off the hour", UsageQuery{Subject: alice, From: hour, To: now, GroupBy: UsageByDay}, "to"},
		{"to before from", UsageQuery{Subject: alice, From: hour, To: hour.Add(-time.Hour), GroupBy: UsageByDay}, "to"},
		{"span", UsageQuery{Subject: alice, From: hour, To: hour.Add(UsageMaxSpan + time.Hour), GroupBy: UsageByDay}, "to"},
		{"too far back", UsageQuery{Subject: alice, From: hour.Add(-UsageMaxSpan - time.Hour), To: hour, GroupBy: UsageByDay}, "from"},
	}
	for _, tc := range tests {
		err := tc.q.Check(now)
		var pe *UsageParamError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.field != "" && (!errors.As(err, &pe) || pe.Field != tc.field || !errors.Is(err, ErrInvalidParams)):
			t.Errorf("%s: %v, want a UsageParamError for %s", tc.name, err, tc.field)
		}
	}
}
