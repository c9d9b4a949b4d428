package webhook_test

import (
	"strconv"
	"time"
)

func strconvUnix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
