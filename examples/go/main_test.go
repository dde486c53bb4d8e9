package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startRedis starts a server (the first of REDIS_SERVERS, else
// redis-server; with the module of RL_MODULE, else the build's) on a free
// port, stopped with the test.
func startRedis(t *testing.T) string {
	t.Helper()
	binary := "redis-server"
	if s := strings.Fields(os.Getenv("REDIS_SERVERS")); len(s) > 0 {
		binary = s[0]
	}
	module := os.Getenv("RL_MODULE")
	if module == "" {
		module = filepath.Join("..", "..", "target", "release", "libredis_ratelimit.so")
	}
	if _, err := os.Stat(module); err != nil {
		t.Fatalf("the module %s is missing: run cargo build --release (or set RL_MODULE)", module)
	}
	if _, err := exec.LookPath(binary); err != nil {
		t.Fatalf("the server %s is missing: run scripts/deps.sh --test", binary)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(binary, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loadmodule", module)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer on %s", binary, addr)
		}
	}
	return addr
}

// The service on a real port, requests over HTTP: allowed with the header
// fields, refused with 429, two in flight at most, a 5xx given back.
func TestService(t *testing.T) {
	addr := startRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	h, err := handler(rdb, 250*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, l, h) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	base := "http://" + l.Addr().String()
	get := func(path, client string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("X-Client-Id", client)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(body)
	}
	res, body := get("/", "alice")
	if res.StatusCode != 200 || body != "ok\n" || res.Header.Get("X-RateLimit-Remaining") != "1" ||
		res.Header.Get("RateLimit-Policy") != `"second";q=2;w=1, "minute";q=30;w=60, "inflight";q=2;qu="concurrent-requests"` {
		t.Fatalf("first: %d %q %v", res.StatusCode, body, res.Header)
	}
	get("/", "alice")
	res, body = get("/", "alice")
	if res.StatusCode != 429 || body != "rate limited: retry in 1 s\n" || res.Header.Get("Retry-After") != "1" {
		t.Fatalf("third in a second: %d %q %v", res.StatusCode, body, res.Header)
	}
	// Two slow requests hold both slots; a third waits for nothing: 429.
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); get("/slow/1500", "bob") }()
	}
	time.Sleep(1100 * time.Millisecond) // both taken, and past the per-second window
	res, _ = get("/", "bob")
	if res.StatusCode != 429 || !strings.HasPrefix(res.Header.Get("RateLimit"), `"inflight";r=0`) {
		t.Fatalf("a third in flight: %d %v", res.StatusCode, res.Header)
	}
	wg.Wait()
	res, _ = get("/status/503", "carol")
	if res.StatusCode != 503 || res.Header.Get("X-RateLimit-Remaining") != "1" {
		t.Fatalf("/status/503: %d %v", res.StatusCode, res.Header)
	}
}
