package container

// LastWords are the last lines a container printed before it ended, kept
// with the event that recorded the end (a non-zero exit, a failure, a stop
// or delete by a group policy), so that the instance's history says why it
// ended for as long as events are kept, even once the container is gone.
// They are the owner's data: shown by the events route to whoever may read
// the instance's history, never written to berth's own logs or metrics.
type LastWords struct {
	// Lines are oldest first, at most LastWordsMaxLines of them holding at
	// most LastWordsMaxBytes of text in all.
	Lines []OutputLine `json:"lines"`
	// Truncated says that the container printed more than Lines hold:
	// earlier lines, or the start of the first one, were left out.
	Truncated bool `json:"truncated,omitempty"`
}

// OutputLine is one line (or the kept end of a long one) of LastWords.
type OutputLine struct {
	// Stream is stdout or stderr; empty when the runtime mixes them
	// (Kubernetes).
	Stream string `json:"stream,omitempty"`
	// Text is the line without its newline, as valid UTF-8 (other bytes
	// become U+FFFD).
	Text string `json:"text"`
}

// The bounds of LastWords: the lines an event keeps, and their text in
// bytes. An event stays small (a DynamoDB item holds at most 400 KB).
const (
	LastWordsMaxLines = 100
	LastWordsMaxBytes = 16 << 10
)
