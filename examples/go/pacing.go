package main

// Pacing: workers that call a rate-limited API (a provider allowing 500
// requests a minute to the whole fleet) take turns instead of refusals.
// Every worker of every process asks the same limit for a turn with
// Acquire; the module books the turn and answers the wait, the worker
// sleeps it, then calls. Together they never exceed the rate.
//
//	REDIS_ADDR=127.0.0.1:6379 go run . pacing [workers] [jobs]

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	ratelimit "github.com/redis-ratelimit/redis-ratelimit/clients/go"
)

// providerLimit is the provider's: 500 calls a minute, one at a time (no
// burst: a turn every 120 ms).
var providerLimit = ratelimit.Throttle{MaxBurst: 0, Count: 500, Period: time.Minute}

// pace runs jobs on workers goroutines, each call after a turn of limit on
// key (waiting up to maxWait for it), and answers how many were called.
// A job whose turn is further than maxWait is retried after the wait the
// refusal names; ctx ending stops everything.
func pace(ctx context.Context, l *ratelimit.Limiter, key string, limit ratelimit.Throttle, workers int, jobs []int,
	maxWait time.Duration, call func(ctx context.Context, job int) error) (int, error) {
	queue := make(chan int)
	var mu sync.Mutex
	done := 0
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range queue {
				for {
					_, err := l.Acquire(ctx, key, limit, maxWait)
					var limited *ratelimit.LimitedError
					if errors.As(err, &limited) && !limited.Result.NeverFits && ctx.Err() == nil {
						// No turn within maxWait: ask again when one will be.
						t := time.NewTimer(max(limited.RetryAfter-maxWait, time.Millisecond))
						select {
						case <-t.C:
							continue
						case <-ctx.Done():
							t.Stop()
						}
					}
					if err == nil {
						err = call(ctx, job)
					}
					mu.Lock()
					if err == nil {
						done++
					} else if first == nil {
						first = err
					}
					mu.Unlock()
					break
				}
			}
		}()
	}
feed:
	for _, j := range jobs {
		select {
		case queue <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	return done, first
}

func runPacing(ctx context.Context, l *ratelimit.Limiter, workers, jobs int) error {
	list := make([]int, jobs)
	for i := range list {
		list[i] = i
	}
	start := time.Now()
	n, err := pace(ctx, l, "rl:provider:calls", providerLimit, workers, list, 10*time.Second,
		func(ctx context.Context, job int) error {
			fmt.Printf("%7.3f s  job %d\n", time.Since(start).Seconds(), job)
			return nil
		})
	fmt.Printf("%d calls in %.1f s by %d workers\n", n, time.Since(start).Seconds(), workers)
	return err
}
