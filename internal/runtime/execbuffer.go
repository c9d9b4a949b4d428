package runtime

// BoundedBuffer keeps the first Limit bytes written to it and counts the
// rest without keeping them: a command's stream is read to its end (so the
// command is never blocked on a full pipe) while memory stays bounded.
type BoundedBuffer struct {
	// Limit is the most bytes kept.
	Limit int
	buf   []byte
	// Dropped counts the bytes written past Limit.
	Dropped int64
}

// Write keeps what fits under Limit and drops the rest; it never fails,
// so a copy into it reads its source to the end.
func (b *BoundedBuffer) Write(p []byte) (int, error) {
	room := b.Limit - len(b.buf)
	if room > 0 {
		k := min(room, len(p))
		if need := len(b.buf) + k; need > cap(b.buf) {
			// Grown as output comes, never past Limit: a small output
			// costs little, a large one at most Limit.
			grown := make([]byte, len(b.buf), min(b.Limit, max(need, 2*cap(b.buf), 4096)))
			copy(grown, b.buf)
			b.buf = grown
		}
		b.buf = append(b.buf, p[:k]...)
		b.Dropped += int64(len(p) - k)
	} else {
		b.Dropped += int64(len(p))
	}
	return len(p), nil
}

// Bytes is what was kept (at most Limit bytes).
func (b *BoundedBuffer) Bytes() []byte { return b.buf }

// Truncated says some bytes were dropped.
func (b *BoundedBuffer) Truncated() bool { return b.Dropped > 0 }
