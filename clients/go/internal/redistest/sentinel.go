package redistest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Sentinel is a master with the module, one replica of it (with the
// module), and one sentinel monitoring them as Name.
type Sentinel struct {
	Name     string
	Master   *Server
	Replica  *Server
	Sentinel *Server
}

// StartSentinel starts the three processes of binary (the sentinel is
// binary with a configuration file and --sentinel: a binary that cannot
// fails the test), waits (bounded) until the replica's link is up and the
// sentinel lists the replica, and stops them with the test.
func StartSentinel(t testing.TB, binary string) *Sentinel {
	t.Helper()
	start := func(head, load, extra []string) *Server {
		s, err := launch(binary, head, load, extra)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		return s
	}
	// No delay before the replica's first sync (5 s by default).
	m := start(nil, []string{}, []string{"--dir", t.TempDir(), "--repl-diskless-sync-delay", "0"})
	r := start(nil, []string{}, []string{"--dir", t.TempDir(), "--replicaof", "127.0.0.1", strconv.Itoa(m.Port)})
	rc := r.Client(t)
	// The sentinel starts once the replica is linked: its first INFO of
	// the master lists the replica (the next one comes 10 s later).
	poll(t, "the replica's link is up", func(ctx context.Context) (bool, string) {
		info, err := rc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up"), fmt.Sprint(info, err)
	})
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	name := "rlmaster"
	text := fmt.Sprintf("dir %s\nsentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 5000\nsentinel failover-timeout %s 20000\n", dir, name, m.Port, name, name)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start([]string{conf, "--sentinel"}, nil, nil)
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
	t.Cleanup(func() { _ = sc.Close() })
	poll(t, "the sentinel lists the replica", func(ctx context.Context) (bool, string) {
		replicas, err := sc.Replicas(ctx, name).Result()
		if err != nil || len(replicas) != 1 || replicas[0]["port"] != strconv.Itoa(r.Port) || strings.Contains(replicas[0]["flags"], "down") {
			return false, fmt.Sprint(replicas, err)
		}
		return true, ""
	})
	return &Sentinel{Name: name, Master: m, Replica: r, Sentinel: s}
}

// Failover asks the sentinel for a failover (SENTINEL FAILOVER, again
// while it answers that no replica is good yet) and waits (bounded) until
// it reports the replica as the master and the replica says role:master.
// (The old master turns replica later, at the sentinel's next look at it,
// up to 10 s on: a client follows the sentinel's +switch-master, not it.)
func (s *Sentinel) Failover(t testing.TB) {
	t.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Sentinel.Addr})
	defer sc.Close()
	poll(t, "SENTINEL FAILOVER is accepted", func(ctx context.Context) (bool, string) {
		err := sc.Failover(ctx, s.Name).Err()
		return err == nil, fmt.Sprint(err)
	})
	rc := redis.NewClient(&redis.Options{Addr: s.Replica.Addr})
	defer rc.Close()
	poll(t, "the sentinel reports the replica as the master", func(ctx context.Context) (bool, string) {
		addr, err := sc.GetMasterAddrByName(ctx, s.Name).Result()
		if err != nil || len(addr) != 2 || addr[1] != strconv.Itoa(s.Replica.Port) {
			return false, fmt.Sprint(addr, err)
		}
		info, err := rc.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "role:master"), fmt.Sprint(info, err)
	})
}
