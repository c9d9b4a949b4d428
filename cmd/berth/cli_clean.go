package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// cliClean keeps server-supplied text from steering the terminal, on one
// line (a cell, a message): tabs and newlines become spaces, every other
// control character '?'.
func cliClean(s string) string { return cliSanitize(s, ' ') }

// cliCleanLines is cliClean for text of many lines, a container's output:
// tabs and newlines are kept.
func cliCleanLines(s string) string { return cliSanitize(s, -1) }

// cliSanitize is the one rule of what the CLI lets through to a terminal:
// C0 and C1 control characters and DEL (escape sequences, NUL, a carriage
// return that would overwrite a line) become '?', bytes that are not UTF-8
// U+FFFD (a lone 0x9b is a terminal's CSI). Tabs and newlines become
// layout, or are kept when layout is negative.
func cliSanitize(s string, layout rune) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n':
			if layout < 0 {
				return r
			}
			return layout
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return '?'
		}
		return r
	}, s)
}

// cliCleanWriter writes what it is given through cliCleanLines. A UTF-8
// sequence split between two writes is held until its rest comes, so that
// it is not taken for invalid bytes; Flush writes what is still held.
type cliCleanWriter struct {
	w    io.Writer
	held []byte
}

func (c *cliCleanWriter) Write(p []byte) (int, error) {
	b := slices.Concat(c.held, p)
	cut := len(b) - cliPartialRune(b)
	c.held = append([]byte(nil), b[cut:]...)
	if _, err := io.WriteString(c.w, cliCleanLines(string(b[:cut]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what a last write left held (an unfinished sequence, which
// becomes U+FFFD).
func (c *cliCleanWriter) Flush() error {
	if len(c.held) == 0 {
		return nil
	}
	_, err := io.WriteString(c.w, cliCleanLines(string(c.held)))
	c.held = nil
	return err
}

// cliPartialRune is the length of the valid but unfinished UTF-8 sequence
// b ends with, if it ends with one.
func cliPartialRune(b []byte) int {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return 0
			}
			return len(b) - i
		}
	}
	return 0
}

// cliCleanOutput runs write on w through a cliCleanWriter, or on w itself
// when raw.
func cliCleanOutput(w io.Writer, raw bool, write func(io.Writer) error) error {
	if raw {
		return write(w)
	}
	cw := &cliCleanWriter{w: w}
	err := write(cw)
	return errors.Join(err, cw.Flush())
}
