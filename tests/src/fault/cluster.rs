//! A three-node NATS cluster with JetStream for one test (#27 item 4), so a test can kill one
//! node of a deployment's cluster and start it again without touching the machine's server.
//!
//! Each node is a [`NatsServer`] of its own on loopback ports — client, cluster (routes) and
//! monitoring — with its own `server_name` and JetStream store, and routes to the others (the
//! same route list on every node, as a deployment writes it; a node skips the route to itself).
//! [`NatsCluster::start`] returns once the cluster has formed: every node answers its monitoring
//! `/healthz`, which says ok only when JetStream has a meta leader and the node's streams are
//! current.

use std::time::{Duration, Instant};

use super::NatsServer;
use super::nats::free_port;

/// How many nodes: the smallest cluster that keeps a JetStream quorum with one node down.
pub const NODES: usize = 3;

/// How long forming (or re-forming after a restart) may take.
const FORMED_WITHIN: Duration = Duration::from_secs(30);

/// A running three-node cluster; dropping it kills every node and removes their stores.
#[derive(Debug)]
pub struct NatsCluster {
    nodes: Vec<NatsServer>,
    http: reqwest::Client,
}

impl NatsCluster {
    /// Start three nodes and wait until the cluster has formed.
    pub async fn start() -> anyhow::Result<Self> {
        let cluster = format!("wazap-{}", crate::random_hex(4));
        let routes: Vec<u16> = (0..NODES).map(|_| free_port()).collect::<Result<_, _>>()?;
        let route_list = routes
            .iter()
            .map(|p| format!("\"nats-route://127.0.0.1:{p}\""))
            .collect::<Vec<_>>()
            .join(", ");
        let mut nodes = Vec::with_capacity(NODES);
        for (i, port) in routes.iter().enumerate() {
            // The storage limit past any disk: JetStream sets each media bucket's max_bytes aside
            // from it on every node holding a copy (as `scripts/services.sh` explains).
            let config = format!(
                "server_name: {name}\n\
                 cluster {{\n  name: {cluster}\n  listen: \"127.0.0.1:{port}\"\n  routes: [{route_list}]\n}}\n\
                 jetstream {{ max_file_store: 4TB }}\n",
                name = node_name(i),
            );
            nodes.push(NatsServer::start_configured(&config, &[]).await?);
        }
        let cluster = Self {
            nodes,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(2))
                .build()?,
        };
        cluster.wait_formed().await?;
        Ok(cluster)
    }

    /// Every node's client URL, comma-separated, in node order (`WAZAP_NATS_URL`).
    pub fn urls(&self) -> String {
        self.urls_from(0)
    }

    /// Every node's client URL, comma-separated, starting with node `first` (another order
    /// of the same list, for a second client).
    pub fn urls_from(&self, first: usize) -> String {
        (0..NODES)
            .map(|i| self.nodes[(first + i) % NODES].url())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Node `i` itself.
    pub fn node(&self, i: usize) -> &NatsServer {
        &self.nodes[i]
    }

    /// The `server_name` of node `i` (what JetStream names a stream's leader and peers by).
    pub fn name(&self, i: usize) -> String {
        node_name(i)
    }

    /// The index of the node named `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        (0..NODES).find(|&i| node_name(i) == name)
    }

    /// The names of the clients connected to node `i` right now (its `/connz`).
    pub async fn clients(&self, i: usize) -> anyhow::Result<Vec<String>> {
        let url = format!("{}/connz?limit=1024", self.monitor(i)?);
        let connz: serde_json::Value = self.http.get(url).send().await?.json().await?;
        Ok(connz["connections"]
            .as_array()
            .map(|all| {
                all.iter()
                    .filter_map(|c| c["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The running nodes each client named `name` is connected to (one index per connection).
    pub async fn nodes_of(&self, name: &str) -> anyhow::Result<Vec<usize>> {
        let mut found = Vec::new();
        for i in (0..NODES).filter(|&i| self.nodes[i].running()) {
            let clients = self.clients(i).await?;
            found.extend(clients.iter().filter(|c| *c == name).map(|_| i));
        }
        Ok(found)
    }

    /// Kill node `i` (SIGKILL, as a crash would); its clients' connections end.
    pub async fn kill(&mut self, i: usize) -> anyhow::Result<()> {
        self.nodes[i].kill().await
    }

    /// Start node `i` again on its ports and store, and wait until the cluster has formed
    /// again with it (it caught up with the streams it holds a copy of).
    pub async fn start_again(&mut self, i: usize) -> anyhow::Result<()> {
        self.nodes[i].start_again().await?;
        self.wait_formed().await
    }

    /// Wait until every running node's `/healthz` answers ok.
    pub async fn wait_formed(&self) -> anyhow::Result<()> {
        let deadline = Instant::now() + FORMED_WITHIN;
        for i in (0..NODES).filter(|&i| self.nodes[i].running()) {
            let url = format!("{}/healthz", self.monitor(i)?);
            loop {
                let healthy = match self.http.get(&url).send().await {
                    Ok(r) => r.status().is_success(),
                    Err(_) => false,
                };
                if healthy {
                    break;
                }
                anyhow::ensure!(
                    Instant::now() < deadline,
                    "NATS cluster node {} not healthy within {FORMED_WITHIN:?}:\n{}",
                    node_name(i),
                    self.nodes[i].log()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    fn monitor(&self, i: usize) -> anyhow::Result<String> {
        self.nodes[i]
            .monitor_url()
            .ok_or_else(|| anyhow::anyhow!("node {i} has no monitoring port"))
    }
}

fn node_name(i: usize) -> String {
    format!("n{i}")
}
