package ratelimit

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrWrongType matches (errors.Is) a WRONGTYPE reply: a key holds another
// type than the command's kind (or another backend's state).
var ErrWrongType = errors.New("WRONGTYPE")

// ErrBackendUnavailable matches (errors.Is) a BackendError.
var ErrBackendUnavailable = errors.New("ratelimit: backend unavailable")

// CommandError is an ERR reply of the module (or the scripts, which answer
// the same text): a refused argument, a malformed command line. Message is
// the server's text; Argument names the refused argument when the text
// starts with one (`ERR window must be ...`: "window"), and Spec is the
// 1-based spec the text names (`ERR spec 2 (SLIDE): ...`), 0 when none.
type CommandError struct {
	Command  string
	Argument string
	Spec     int
	Message  string
}

func (e *CommandError) Error() string { return e.Message }

// ArgumentError is an argument refused before anything is sent: a Go value
// the command line cannot carry (a time that is not whole milliseconds, no
// rules, too many). Argument names it.
type ArgumentError struct {
	Argument string
	Message  string
}

func (e *ArgumentError) Error() string { return "ratelimit: " + e.Message }

// WrongTypeError is a WRONGTYPE reply; errors.Is(err, ErrWrongType) holds.
type WrongTypeError struct {
	Command string
	Message string
}

func (e *WrongTypeError) Error() string { return e.Message }

// Is matches ErrWrongType.
func (e *WrongTypeError) Is(target error) bool { return target == ErrWrongType }

// BackendError says that no backend can answer: the module is not loaded
// and the module was asked for, or the scripts do not answer the command.
// errors.Is(err, ErrBackendUnavailable) holds.
type BackendError struct {
	Message string
}

func (e *BackendError) Error() string { return "ratelimit: " + e.Message }

// Is matches ErrBackendUnavailable.
func (e *BackendError) Is(target error) bool { return target == ErrBackendUnavailable }

var argumentText = regexp.MustCompile(`^ERR (?:spec (\d+) \([A-Z]+\): )?([a-z_]+) (?:must |is given |expects )`)

// replyError types a server's error reply; other errors (the network, a
// context that ended) come back as they are.
func replyError(command string, err error) error {
	text := err.Error()
	if !isReply(err) {
		return err
	}
	switch {
	case strings.HasPrefix(text, "WRONGTYPE"):
		return &WrongTypeError{Command: command, Message: text}
	case strings.HasPrefix(text, "CROSSSLOT"):
		return &CrossSlotError{Command: command, Message: text}
	case strings.HasPrefix(text, "ERR "):
		e := &CommandError{Command: command, Message: text}
		if m := argumentText.FindStringSubmatch(text); m != nil {
			e.Argument = m[2]
			e.Spec, _ = strconv.Atoi(m[1])
		} else if m := regexp.MustCompile(`^ERR spec (\d+)`).FindStringSubmatch(text); m != nil {
			e.Spec, _ = strconv.Atoi(m[1])
		}
		return e
	}
	return err
}

// ErrCrossSlot matches (errors.Is) a CrossSlotError.
var ErrCrossSlot = errors.New("CROSSSLOT")

// CrossSlotError is a cluster's CROSSSLOT reply: one call (RL.ALLOW,
// RL.PEEK) named keys of different hash slots, which no node can decide
// together; nothing was recorded. Keys that share a hash tag ({user:42}:a,
// {user:42}:b) share a slot. errors.Is(err, ErrCrossSlot) holds.
type CrossSlotError struct {
	Command string
	Message string
}

func (e *CrossSlotError) Error() string {
	return e.Message + " (" + e.Command + " on a cluster: the keys of one call need a shared hash tag, as {user:42}:a and {user:42}:b)"
}

// Is matches ErrCrossSlot.
func (e *CrossSlotError) Is(target error) bool { return target == ErrCrossSlot }

// ErrLimited matches (errors.Is) a LimitedError.
var ErrLimited = errors.New("ratelimit: rate limited")

// LimitedError is Acquire's and AcquireAll's refusal: no turn within the
// wait allowed. RetryAfter is the module's retry_after (0 with NeverFits:
// the request exceeds the capacity); Result is the whole reply.
type LimitedError struct {
	Result     Result
	RetryAfter time.Duration
}

func (e *LimitedError) Error() string {
	if e.Result.NeverFits {
		return "ratelimit: rate limited: the request exceeds the capacity"
	}
	return fmt.Sprintf("ratelimit: rate limited: retry after %v", e.RetryAfter)
}

// Is matches ErrLimited.
func (e *LimitedError) Is(target error) bool { return target == ErrLimited }
