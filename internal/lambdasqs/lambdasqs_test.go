package lambdasqs

import (
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// TestDelivery: what the worker reads from a record (receive count for its
// attempt number, sent time for queue age, string attributes) survives the
// conversion, and absent or malformed attributes leave zero values.
func TestDelivery(t *testing.T) {
	s := "create"
	d := Delivery(events.SQSMessage{MessageId: "m1", ReceiptHandle: "h1", Body: `{"op":"create"}`,
		Attributes: map[string]string{"ApproximateReceiveCount": "3", "SentTimestamp": "1796028680215"},
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"op":  {StringValue: &s, DataType: "String"},
			"bin": {BinaryValue: []byte{1}, DataType: "Binary"},
		}})
	if d.MessageID != "m1" || d.Handle != "h1" || string(d.Body) != `{"op":"create"}` || d.ReceiveCount != 3 ||
		!d.SentAt.Equal(time.UnixMilli(1796028680215)) || d.Attributes["op"] != "create" || len(d.Attributes) != 1 {
		t.Errorf("Delivery = %+v", d)
	}
	d = Delivery(events.SQSMessage{MessageId: "m2", Attributes: map[string]string{"ApproximateReceiveCount": "x"}})
	if d.ReceiveCount != 0 || !d.SentAt.IsZero() || d.Attributes != nil {
		t.Errorf("Delivery without attributes = %+v", d)
	}
}
