package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// NewLeaseID is a fresh lease id: 16 random bytes as 32 lower-case hex digits.
func NewLeaseID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// Hold takes a lease of weight quantity on key under a fresh id and,
// when it is granted, holds it: a goroutine renews it (RL.LEASE again,
// every third of its TTL) until the returned release function runs or ctx
// ends; then RL.RELEASE is sent, exactly once however often release is
// called. release answers the RL.RELEASE's error, or nil; it waits for the
// release to be sent. When refused (Result.Allowed false), nothing is
// held and release does nothing. A renewal that fails or is refused ends
// the holding (the lease then lapses at its TTL, or is released).
func (l *Limiter) Hold(ctx context.Context, key string, limit Lease, quantity int64) (Result, func() error, error) {
	id := NewLeaseID()
	res, err := l.Lease(ctx, key, limit, id, quantity)
	if err != nil {
		// A lease may have been granted by a command that answered late.
		go l.releaseQuietly(key, id, limit.TTL)
		return Result{}, func() error { return nil }, err
	}
	if !res.Allowed {
		return res, func() error { return nil }, nil
	}
	h := &holding{l: l, key: key, id: id, limit: limit, quantity: quantity, stop: make(chan struct{}), done: make(chan struct{})}
	go h.renew(ctx)
	return res, h.release, nil
}

type holding struct {
	l        *Limiter
	key, id  string
	limit    Lease
	quantity int64
	once     sync.Once
	stop     chan struct{}
	done     chan struct{}
	err      error
}

// releaseTimeout bounds the RL.RELEASE sent when a holding ends.
const releaseTimeout = 5 * time.Second

func (h *holding) renew(ctx context.Context) {
	defer close(h.done)
	every := max(h.limit.TTL/3, time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-h.stop:
			h.err = h.sendRelease()
			return
		case <-ctx.Done():
			h.err = h.sendRelease()
			return
		case <-tick.C:
			res, err := h.l.Lease(ctx, h.key, h.limit, h.id, h.quantity)
			if err == nil && res.Allowed {
				continue
			}
			// Refused or failed (or ctx ended meanwhile): the slot is not
			// ours to keep; give back what may remain of it.
			h.err = h.sendRelease()
			return
		}
	}
}

func (h *holding) sendRelease() error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_, err := h.l.Release(ctx, h.key, h.id)
	return err
}

func (h *holding) release() error {
	h.once.Do(func() { close(h.stop) })
	<-h.done
	return h.err
}

func (l *Limiter) releaseQuietly(key, id string, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), min(max(ttl, time.Second), releaseTimeout))
	defer cancel()
	_, _ = l.Release(ctx, key, id)
}
