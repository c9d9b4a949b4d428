package container

import (
	"testing"

	"github.com/berth-io/berth/internal/fsm"
)

func TestDeliveryKind(t *testing.T) {
	for _, tc := range []struct {
		d    Delivery
		want DeliveryKind
	}{
		{Delivery{To: fsm.Pending}, DeliveryCreated},
		{Delivery{From: fsm.Pending, To: fsm.Creating}, DeliveryStatusChanged},
		{Delivery{From: fsm.Deleting}, DeliveryDeleted},
		{Delivery{Group: &GroupResult{}}, DeliveryGroupFinished},
	} {
		if got := tc.d.Kind(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestCheckKindNames(t *testing.T) {
	full := map[DeliveryKind]string{DeliveryCreated: "a", DeliveryStatusChanged: "b", DeliveryDeleted: "c", DeliveryGroupFinished: "d"}
	if err := CheckKindNames(full); err != nil {
		t.Fatal(err)
	}
	short := map[DeliveryKind]string{DeliveryCreated: "a", DeliveryStatusChanged: "b", DeliveryDeleted: "c"}
	dup := map[DeliveryKind]string{DeliveryCreated: "a", DeliveryStatusChanged: "b", DeliveryDeleted: "c", DeliveryGroupFinished: "a"}
	extra := map[DeliveryKind]string{DeliveryCreated: "a", DeliveryStatusChanged: "b", DeliveryDeleted: "c", DeliveryGroupFinished: "d", "x": "e"}
	for name, names := range map[string]map[DeliveryKind]string{"a kind unnamed": short, "a name twice": dup, "an unknown kind": extra} {
		if CheckKindNames(names) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
