//! A Redis Cluster of three masters with one replica each, from the
//! module built by this `cargo test`: six servers (`Server`, so the same
//! binary, module and clean-up as every other test), joined with
//! `redis-cli --cluster create` and waited for until every node agrees on
//! who serves what. Used by tests/cluster.rs and tests/lease.rs.
//!
//! `redis-cli` is `$REDIS_CLI` (default `redis-cli` on PATH); a missing one
//! fails the test, naming the set-up that installs it.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use redis::cluster::{ClusterClient, ClusterConnection};

use super::{cmd, connect, info_value, Connection, Server};

/// One node as `CLUSTER NODES` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: String,
    pub port: u16,
    pub master: bool,
    pub master_id: Option<String>,
    pub slots: Vec<(u16, u16)>,
}

/// The cluster as one node sees it, by port.
pub fn topology(con: &mut Connection) -> BTreeMap<u16, Node> {
    let text: String = redis::cmd("CLUSTER")
        .arg("NODES")
        .query(con)
        .expect("CLUSTER NODES");
    let mut nodes = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let addr = f[1].split(['@', ',']).next().unwrap();
        let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
        let master = f[2].split(',').any(|x| x == "master");
        let master_id = (f[3] != "-").then(|| f[3].to_string());
        let slots = f[8..]
            .iter()
            .filter(|s| !s.starts_with('['))
            .map(|s| match s.split_once('-') {
                Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                None => (s.parse().unwrap(), s.parse().unwrap()),
            })
            .collect();
        nodes.insert(
            port,
            Node {
                id: f[0].to_string(),
                port,
                master,
                master_id,
                slots,
            },
        );
    }
    nodes
}

pub fn owner_of(topo: &BTreeMap<u16, Node>, slot: u16) -> u16 {
    topo.values()
        .find(|n| n.master && n.slots.iter().any(|&(a, b)| a <= slot && slot <= b))
        .unwrap_or_else(|| panic!("no master owns slot {slot}"))
        .port
}

pub fn replica_of(topo: &BTreeMap<u16, Node>, master: u16) -> u16 {
    let id = &topo[&master].id;
    topo.values()
        .find(|n| n.master_id.as_deref() == Some(id.as_str()))
        .unwrap_or_else(|| panic!("master {master} has no replica"))
        .port
}

pub fn keyslot(con: &mut Connection, key: &str) -> u16 {
    redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(con)
        .expect("CLUSTER KEYSLOT")
}

/// Waits up to `secs` seconds for `f` to answer `Ok`; on timeout the
/// last observation is in the panic message.
pub fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> Result<(), String>) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut last;
    loop {
        match f() {
            Ok(()) => return,
            Err(e) => last = e,
        }
        if Instant::now() >= deadline {
            panic!("timed out after {secs}s waiting for {what}: {last}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn try_conn(port: u16) -> Result<Connection, String> {
    connect(port, Duration::from_secs(10)).map_err(|e| format!("{port}: {e}"))
}

/// `field` of what `command` (INFO or CLUSTER INFO) answers on the node at
/// `port`, through a fresh connection.
pub fn try_info_field(port: u16, command: &[&str], field: &str) -> Result<String, String> {
    let mut con = try_conn(port)?;
    let info: String = cmd(command)
        .query(&mut con)
        .map_err(|e| format!("{port}: {e}"))?;
    Ok(info_value(&info, field))
}

pub fn try_field(port: u16, section: &str, field: &str) -> Result<String, String> {
    try_info_field(port, &["INFO", section], field)
}

pub fn cluster_info_field(port: u16, field: &str) -> Result<String, String> {
    try_info_field(port, &["CLUSTER", "INFO"], field)
}

/// Waits until the replica at `replica` has applied everything that its
/// master at `master` had propagated when this was called. (`WAIT` counts
/// only the writes of the connection it is sent on: on any other, such as a
/// fresh one after writes through the cluster client, it returns at once.)
pub fn wait_caught_up(master: u16, replica: u16) {
    let offset = |port: u16, field: &str| -> Result<i64, String> {
        let v = try_field(port, "replication", field)?;
        v.parse().map_err(|e| format!("{port}: {field} {v:?}: {e}"))
    };
    let target = offset(master, "master_repl_offset").expect("the master's offset");
    wait_for(
        10,
        &format!("replica {replica} to catch up with {master}"),
        || {
            let applied = offset(replica, "slave_repl_offset")?;
            if applied >= target {
                Ok(())
            } else {
                Err(format!(
                    "{replica} applied {applied}, {master} was at {target}"
                ))
            }
        },
    );
}

/// Every node: state ok, all slots served, six nodes known, and the same
/// view of who is master of what; every replica linked to its master.
pub fn cluster_settled(ports: &[u16]) -> Result<(), String> {
    let mut views = Vec::new();
    for &p in ports {
        let state = cluster_info_field(p, "cluster_state")?;
        let slots = cluster_info_field(p, "cluster_slots_ok")?;
        let known = cluster_info_field(p, "cluster_known_nodes")?;
        if state != "ok" || slots != "16384" || known != ports.len().to_string() {
            return Err(format!(
                "{p}: state {state}, slots_ok {slots}, known {known}"
            ));
        }
        let topo = topology(&mut try_conn(p)?);
        let view: Vec<Node> = topo.values().cloned().collect();
        views.push((p, view));
        let role = try_field(p, "replication", "role")?;
        let want = if topo[&p].master { "master" } else { "slave" };
        if role != want {
            return Err(format!("{p}: role {role}, cluster says {want}"));
        }
        if role == "slave" {
            let link = try_field(p, "replication", "master_link_status")?;
            if link != "up" {
                return Err(format!("{p}: master_link_status {link}"));
            }
        }
    }
    if views.iter().any(|(_, v)| v != &views[0].1) {
        return Err(format!("views differ: {views:?}"));
    }
    let masters = views[0].1.iter().filter(|n| n.master).count();
    if masters != 3 {
        return Err(format!("{masters} masters"));
    }
    Ok(())
}

/// Six free cluster bus ports outside the ephemeral range, where the
/// harness picks the client ports (`port + 10000` may not exist).
pub fn bus_ports() -> Vec<u16> {
    let seed = std::process::id() as u64
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64;
    let mut ports = Vec::new();
    let mut candidate = 20000 + (seed % 10000) as u16;
    while ports.len() < 6 {
        candidate = if candidate >= 30000 {
            20000
        } else {
            candidate + 1
        };
        if TcpListener::bind(("127.0.0.1", candidate)).is_ok() {
            ports.push(candidate);
        }
    }
    ports
}

pub fn redis_cli() -> String {
    std::env::var("REDIS_CLI").unwrap_or_else(|_| "redis-cli".to_string())
}

/// `redis-cli --cluster create … --cluster-replicas 1 --cluster-yes`,
/// bounded in time.
pub fn cluster_create(ports: &[u16]) {
    let version = Command::new(redis_cli()).arg("--version").output();
    assert!(
        matches!(&version, Ok(o) if o.status.success()),
        "{} is missing ({version:?}): run `scripts/deps.sh --test` (or `make test`, which runs it), which installs redis-tools, or set REDIS_CLI",
        redis_cli()
    );
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut child = Command::new(redis_cli())
        .arg("--cluster")
        .arg("create")
        .args(ports.iter().map(|p| format!("127.0.0.1:{p}")))
        .args(["--cluster-replicas", "1", "--cluster-yes"])
        .stdin(Stdio::null())
        .stdout(out.reopen().unwrap())
        .stderr(out.reopen().unwrap())
        .spawn()
        .expect("redis-cli");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "redis-cli --cluster create hung; its output:\n{}",
                std::fs::read_to_string(out.path()).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(out.path()).unwrap_or_default();
    assert!(
        status.success() && text.contains("All 16384 slots covered"),
        "redis-cli --cluster create failed ({status}):\n{text}"
    );
}

/// Six running nodes formed into a cluster, stopped when dropped. Which of
/// them are masters is up to `redis-cli`; `topology` says.
pub struct Cluster {
    pub servers: Vec<Server>,
    /// The nodes' client ports, in the order they were started.
    pub ports: Vec<u16>,
}

impl Cluster {
    /// Starts six nodes, forms the cluster and waits until it settled.
    pub fn start() -> Cluster {
        let bus = bus_ports();
        let servers: Vec<Server> = bus
            .iter()
            .map(|b| {
                let b = b.to_string();
                Server::start_with(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                    "--cluster-port",
                    &b,
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
            })
            .collect();
        let ports: Vec<u16> = servers.iter().map(|s| s.port).collect();
        cluster_create(&ports);
        wait_for(30, "the cluster to settle", || cluster_settled(&ports));
        Cluster { servers, ports }
    }

    /// A plain connection to one node.
    pub fn con(&self, port: u16) -> Connection {
        let server = self.servers.iter().find(|s| s.port == port).expect("node");
        server.conn()
    }

    /// The cluster as the first node sees it now.
    pub fn topology(&self) -> BTreeMap<u16, Node> {
        topology(&mut self.con(self.ports[0]))
    }

    /// A cluster-aware connection (redis-rs), which follows MOVED.
    pub fn client(&self) -> ClusterConnection {
        let urls: Vec<String> = self
            .ports
            .iter()
            .map(|p| format!("redis://127.0.0.1:{p}/"))
            .collect();
        ClusterClient::builder(urls)
            .connection_timeout(Duration::from_secs(2))
            .response_timeout(Duration::from_secs(10))
            .build()
            .expect("cluster client")
            .get_connection()
            .expect("cluster connection")
    }

    /// Who is master of what, for the test's output.
    pub fn describe(&self, topo: &BTreeMap<u16, Node>) -> String {
        topo.values()
            .map(|n| {
                let role = try_field(n.port, "replication", "role").unwrap_or_default();
                if n.master {
                    format!("{}=master({role}) slots {:?}", n.port, n.slots)
                } else {
                    let m = topo
                        .values()
                        .find(|m| Some(&m.id) == n.master_id.as_ref())
                        .map(|m| m.port)
                        .unwrap_or(0);
                    format!("{}=replica-of-{m}({role})", n.port)
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}
