// Command sleeper is a Lambda function for the emulator's own tests: it
// sleeps for the event's "sleep" (a Go duration), panics when "panic" is
// set, fails when "fail" is set, and answers {"ok":true} otherwise.
package main

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
)

type event struct {
	Sleep string `json:"sleep"`
	Panic bool   `json:"panic"`
	Fail  bool   `json:"fail"`
}

func main() {
	lambda.Start(func(ctx context.Context, ev event) (map[string]bool, error) {
		if d, err := time.ParseDuration(ev.Sleep); err == nil {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				time.Sleep(d) // a handler that ignores its deadline
			}
		}
		if ev.Panic {
			panic("asked to")
		}
		if ev.Fail {
			return nil, errors.New("asked to fail")
		}
		return map[string]bool{"ok": true}, nil
	})
}
