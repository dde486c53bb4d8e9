package redistest

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// settle bounds every wait for a cluster or a sentinel to agree.
const settle = 30 * time.Second

// poll calls ready every 50 ms until it answers true, or until the
// deadline of settle: then the test fails with what was waited for and the
// last answer.
func poll(t testing.TB, what string, ready func(ctx context.Context) (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ok, last := ready(ctx)
		cancel()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last: %s", what, settle, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Cluster is three masters (no replicas) of one binary, slots 0-5460,
// 5461-10922 and 10923-16383 in the order of Nodes.
type Cluster struct {
	Nodes []*Server
	buses []int // each node's cluster bus port
}

// Addrs are the nodes' addresses.
func (c *Cluster) Addrs() []string {
	a := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		a[i] = n.Addr
	}
	return a
}

// Ranges are the slots each node of Nodes serves, first and last.
var Ranges = [3][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}

// StartCluster forms a cluster of three masters of binary, each in its own
// temporary directory (nodes.conf) on free loopback ports, with the
// module loaded with moduleArgs (nil: no module), and waits (bounded) until
// every node reports cluster_state:ok, knows the three and sees every slot
// served. The nodes stop with the test.
func StartCluster(t testing.TB, binary string, moduleArgs []string) *Cluster {
	t.Helper()
	c := &Cluster{}
	for range 3 {
		bus, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		s, err := launch(binary, nil, moduleArgs, []string{"--dir", dir, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "2000",
			"--cluster-port", strconv.Itoa(bus)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		c.Nodes = append(c.Nodes, s)
		c.buses = append(c.buses, bus)
	}
	clients := make([]*redis.Client, len(c.Nodes))
	for i, n := range c.Nodes {
		clients[i] = n.Client(t)
	}
	ctx := context.Background()
	for i, n := range c.Nodes {
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", Ranges[i][0], Ranges[i][1]).Err(); err != nil {
			t.Fatalf("%s: CLUSTER ADDSLOTSRANGE: %v", n.Name(), err)
		}
		if i > 0 {
			// The bus port is named: it is not the default, port + 10000.
			if err := clients[0].Do(ctx, "CLUSTER", "MEET", "127.0.0.1", n.Port, c.buses[i]).Err(); err != nil {
				t.Fatalf("CLUSTER MEET: %v", err)
			}
		}
	}
	poll(t, "the cluster settles", func(ctx context.Context) (bool, string) {
		for _, rdb := range clients {
			info, err := rdb.ClusterInfo(ctx).Result()
			if err != nil {
				return false, err.Error()
			}
			// Every slot served as this node sees it: it knows each owner.
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:3") || !strings.Contains(info, "cluster_slots_ok:16384") {
				return false, info
			}
		}
		return true, ""
	})
	return c
}
