//! `[network]`: the network a throwaway local cluster runs on, emulated by etcdlat (or, for a
//! cluster it did not start, the toxiproxy server its faults drive).
//!
//! ```toml
//! [network]
//! zones = ["a", "b", "c"]     # members in order, round robin: m0 in a, m1 in b, ...
//! peer-latency = "0.2ms"      # one way, between two members of one zone
//! zone-latency = "1.5ms"      # one way, between two zones
//! client-latency = "0.1ms"    # one way, client to a member of its zone (client-zone, default the first)
//! jitter = "0.1ms"            # every emulated link
//! bandwidth = "100MB/s"       # each direction of each member-to-member link
//!
//! [network.member.m2]
//! client-latency = "10ms"     # this member, from the client, whatever the zones
//!
//! [[network.zone-pair]]
//! between = ["a", "c"]
//! latency = "30ms"
//! ```
//!
//! Every link has two directions with the same settings; a latency is one way, so a round
//! trip over a link takes twice it. A member and the client are joined by `client-latency`
//! when they share a zone and by the zones' latency otherwise; two members by
//! `peer-latency` or their zones' latency. Nothing set: no proxy is in the path at all.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::ScenarioError;
use crate::unit;

/// The `[network]` table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Network {
    /// One-way latency between two members (of one zone, when there are zones).
    #[serde(default, with = "unit::duration", skip_serializing_if = "Duration::is_zero")]
    pub peer_latency: Duration,
    /// One-way latency between the client and a member (of the client's zone, when there are
    /// zones).
    #[serde(default, with = "unit::duration", skip_serializing_if = "Duration::is_zero")]
    pub client_latency: Duration,
    /// Every emulated link's delay varies by up to this much either way (uniformly; a
    /// connection's bytes never reorder).
    #[serde(default, with = "unit::duration", skip_serializing_if = "Duration::is_zero")]
    pub jitter: Duration,
    /// Line rate of each direction of each member-to-member link, in bytes per second
    /// (written `"100MB/s"`, `"1Gbit/s"`).
    #[serde(default, with = "unit::opt_bandwidth", skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<u64>,
    /// Line rate of each direction of each client-to-member link.
    #[serde(default, with = "unit::opt_bandwidth", skip_serializing_if = "Option::is_none")]
    pub client_bandwidth: Option<u64>,
    /// Zone names; members are placed in them in name order, round robin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,
    /// The client's zone (default the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_zone: Option<String>,
    /// One-way latency between two zones.
    #[serde(default, with = "unit::duration", skip_serializing_if = "Duration::is_zero")]
    pub zone_latency: Duration,
    /// Latency and rate between two particular zones (`[[network.zone-pair]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zone_pair: Vec<ZonePair>,
    /// Per member, by name (`[network.member.m2]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub member: BTreeMap<String, MemberNetwork>,
    /// A toxiproxy server's API (`http://HOST:8474`) whose proxies stand between a cluster
    /// etcdlat did not start and its clients or peers: network fault steps become toxics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toxiproxy: Option<String>,
    /// Which toxiproxy proxies carry each member's traffic, by member name (`m0 =
    /// ["etcd0-client", "etcd0-peer"]`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub proxies: BTreeMap<String, Vec<String>>,
}

/// Where a network is for, as far as it is known when it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// A throwaway local cluster etcdlat starts, of this many members when known (the
    /// command line may still set it).
    Local(Option<u32>),
    /// A cluster given by endpoints.
    Endpoints,
    /// Not known yet: a scenario without endpoints of its own, which the command line may
    /// point at endpoints or run on a local cluster.
    Unknown,
}

/// `[[network.zone-pair]]`: what lies between two zones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ZonePair {
    /// The two zones.
    pub between: [String; 2],
    /// One-way latency between them (default `zone-latency`).
    #[serde(default, with = "unit::opt_duration", skip_serializing_if = "Option::is_none")]
    pub latency: Option<Duration>,
    /// Line rate of each direction of each member-to-member link between them (default
    /// `bandwidth`).
    #[serde(default, with = "unit::opt_bandwidth", skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<u64>,
}

/// `[network.member.NAME]`: one member's place in the network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MemberNetwork {
    /// Its zone, instead of the round-robin one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// One-way latency from the client to it, whatever the zones.
    #[serde(default, with = "unit::opt_duration", skip_serializing_if = "Option::is_none")]
    pub client_latency: Option<Duration>,
}

/// One direction of one emulated link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LinkSettings {
    /// One-way delay.
    #[serde(with = "unit::duration")]
    pub latency: Duration,
    /// How much the delay varies either way.
    #[serde(with = "unit::duration")]
    pub jitter: Duration,
    /// Line rate in bytes per second; `None`: unlimited.
    pub bandwidth: Option<u64>,
}

impl Network {
    /// Whether links are emulated (some latency, jitter or rate is set): a local cluster then
    /// runs behind proxies.
    #[must_use]
    pub fn is_emulated(&self) -> bool {
        !(self.peer_latency.is_zero()
            && self.client_latency.is_zero()
            && self.jitter.is_zero()
            && self.zone_latency.is_zero()
            && self.bandwidth.is_none()
            && self.client_bandwidth.is_none()
            && self
                .zone_pair
                .iter()
                .all(|p| p.latency.is_none_or(|l| l.is_zero()) && p.bandwidth.is_none())
            && self.member.values().all(|m| m.client_latency.is_none_or(|l| l.is_zero())))
    }

    /// Whether anything is set at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Checks the table against the cluster it is for, as far as `site` knows it.
    ///
    /// # Errors
    /// [`ScenarioError::Invalid`] naming the key: a zone list longer than the members,
    /// unknown or repeated zones, unknown members, emulation against endpoints, toxiproxy
    /// with a local cluster.
    pub fn validate(&self, site: Site) -> Result<(), ScenarioError> {
        let invalid = |field: &str, msg: String| {
            let field =
                if field.is_empty() { "network".to_owned() } else { format!("network.{field}") };
            Err(ScenarioError::invalid(&field, msg))
        };
        for (i, zone) in self.zones.iter().enumerate() {
            if zone.trim().is_empty() {
                return invalid("zones", "a zone name is empty".into());
            }
            if self.zones[..i].contains(zone) {
                return invalid("zones", format!("zone {zone:?} is listed twice"));
            }
        }
        let known_zone = |field: &str, zone: &str| {
            if self.zones.iter().any(|z| z == zone) {
                Ok(())
            } else if self.zones.is_empty() {
                invalid(
                    field,
                    format!("zone {zone:?} is named but no zones are listed (zones = [...])"),
                )
            } else {
                invalid(field, format!("no zone {zone:?} (zones are {})", self.zones.join(", ")))
            }
        };
        if let Some(zone) = &self.client_zone {
            known_zone("client-zone", zone)?;
        }
        for pair in &self.zone_pair {
            known_zone("zone-pair.between", &pair.between[0])?;
            known_zone("zone-pair.between", &pair.between[1])?;
            if pair.between[0] == pair.between[1] {
                return invalid(
                    "zone-pair.between",
                    format!(
                        "names zone {:?} twice; within a zone, set peer-latency",
                        pair.between[0]
                    ),
                );
            }
        }
        for (name, m) in &self.member {
            if let Some(zone) = &m.zone {
                known_zone(&format!("member.{name}.zone"), zone)?;
            }
        }
        if self.bandwidth == Some(0)
            || self.client_bandwidth == Some(0)
            || self.zone_pair.iter().any(|p| p.bandwidth == Some(0))
        {
            return invalid("bandwidth", "must be more than 0 bytes/s".into());
        }
        if let Site::Local(_) = site {
            if self.toxiproxy.is_some() || !self.proxies.is_empty() {
                return invalid("toxiproxy", "is for clusters etcdlat did not start (given by endpoints); a local cluster's network is emulated by etcdlat itself".into());
            }
        } else if let Site::Endpoints = site {
            if self.is_emulated() || !self.zones.is_empty() || !self.member.is_empty() {
                return invalid("", "latency, bandwidth and zones are emulated only for a throwaway local cluster etcdlat starts, not for a cluster given by endpoints (use toxiproxy there)".into());
            }
            if self.toxiproxy.is_none() && !self.proxies.is_empty() {
                return invalid("proxies", "needs toxiproxy = \"http://HOST:8474\"".into());
            }
        }
        if let Site::Local(Some(n)) = site {
            if self.zones.len() > n as usize {
                return invalid(
                    "zones",
                    format!(
                        "{} zones for {n} member(s): every zone needs a member",
                        self.zones.len()
                    ),
                );
            }
            for name in self.member.keys() {
                if !local_names(n).any(|m| m == *name) {
                    return invalid(
                        &format!("member.{name}"),
                        format!("no member {name:?} in a local cluster of {n} (m0 to m{})", n - 1),
                    );
                }
            }
        }
        Ok(())
    }

    /// The network in words, on one line: `peers 10ms, client 1ms, jitter 0.1ms, 100MB/s
    /// between members; zones a, b, c (client in a) 1.5ms apart; m2 10ms from the client`.
    #[must_use]
    pub fn summary(&self) -> String {
        let d = |d: Duration| unit::format_duration(d);
        let mut parts = Vec::new();
        let mut links = vec![
            format!("peers {}", d(self.peer_latency)),
            format!("client {}", d(self.client_latency)),
        ];
        if !self.jitter.is_zero() {
            links.push(format!("jitter {}", d(self.jitter)));
        }
        if let Some(b) = self.bandwidth {
            links.push(format!("{} between members", unit::format_bandwidth(b)));
        }
        if let Some(b) = self.client_bandwidth {
            links.push(format!("{} to the client", unit::format_bandwidth(b)));
        }
        parts.push(links.join(", "));
        if !self.zones.is_empty() {
            parts.push(format!(
                "zones {} (client in {}) {} apart",
                self.zones.join(", "),
                self.client_zone(),
                d(self.zone_latency)
            ));
        }
        for p in &self.zone_pair {
            let mut pair = format!("{}-{}", p.between[0], p.between[1]);
            if let Some(l) = p.latency {
                pair.push_str(&format!(" {}", d(l)));
            }
            if let Some(b) = p.bandwidth {
                pair.push_str(&format!(" {}", unit::format_bandwidth(b)));
            }
            parts.push(pair);
        }
        for (name, m) in &self.member {
            if let Some(zone) = &m.zone {
                parts.push(format!("{name} in {zone}"));
            }
            if let Some(l) = m.client_latency {
                parts.push(format!("{name} {} from the client", d(l)));
            }
        }
        if let Some(t) = &self.toxiproxy {
            parts.push(format!("toxiproxy {t}"));
        }
        parts.join("; ")
    }

    /// The zone of each of `members` members (empty names when there are no zones).
    #[must_use]
    pub fn member_zones(&self, members: u32) -> Vec<String> {
        local_names(members)
            .enumerate()
            .map(|(i, name)| {
                self.member
                    .get(&name)
                    .and_then(|m| m.zone.clone())
                    .or_else(|| {
                        (!self.zones.is_empty()).then(|| self.zones[i % self.zones.len()].clone())
                    })
                    .unwrap_or_default()
            })
            .collect()
    }

    /// The client's zone (empty when there are no zones).
    #[must_use]
    pub fn client_zone(&self) -> String {
        self.client_zone.clone().or_else(|| self.zones.first().cloned()).unwrap_or_default()
    }

    /// Every link's settings for a local cluster of `members` members: `links[from][to]`,
    /// where 0 is the client and `1 + i` member i; the diagonal is unused. Both directions of
    /// a link are alike.
    #[must_use]
    pub fn links(&self, members: u32) -> Vec<Vec<LinkSettings>> {
        let zones = self.member_zones(members);
        let client_zone = self.client_zone();
        let names: Vec<String> = local_names(members).collect();
        let n = 1 + members as usize;
        let mut links = vec![vec![LinkSettings::default(); n]; n];
        for a in 0..n {
            for b in 0..n {
                if a == b {
                    continue;
                }
                let (za, zb) = (
                    if a == 0 { &client_zone } else { &zones[a - 1] },
                    if b == 0 { &client_zone } else { &zones[b - 1] },
                );
                let pair = self.zone_pair.iter().find(|p| {
                    (&p.between[0] == za && &p.between[1] == zb)
                        || (&p.between[0] == zb && &p.between[1] == za)
                });
                let cross_zone = za != zb;
                let to_client = a == 0 || b == 0;
                let latency = if to_client {
                    let member = &names[a.max(b) - 1];
                    match self.member.get(member).and_then(|m| m.client_latency) {
                        Some(l) => l,
                        None if cross_zone => {
                            pair.and_then(|p| p.latency).unwrap_or(self.zone_latency)
                        }
                        None => self.client_latency,
                    }
                } else if cross_zone {
                    pair.and_then(|p| p.latency).unwrap_or(self.zone_latency)
                } else {
                    self.peer_latency
                };
                let bandwidth = if to_client {
                    self.client_bandwidth
                } else {
                    pair.and_then(|p| p.bandwidth).or(self.bandwidth)
                };
                links[a][b] = LinkSettings { latency, jitter: self.jitter, bandwidth };
            }
        }
        links
    }
}

/// The names of a local cluster's members.
fn local_names(members: u32) -> impl Iterator<Item = String> {
    (0..members).map(|i| format!("m{i}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: f64) -> Duration {
        Duration::from_secs_f64(x / 1000.0)
    }

    fn parse(text: &str) -> Network {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn three_zones_one_line_apart() {
        let net = parse("zones = [\"a\", \"b\", \"c\"]\nzone-latency = \"1.5ms\"\n");
        let links = net.links(3);
        assert_eq!(net.member_zones(3), ["a", "b", "c"]);
        assert_eq!(links[1][2].latency, ms(1.5));
        assert_eq!(links[2][3].latency, ms(1.5));
        // The client sits in a with m0: loopback to it, the zone latency to the others.
        assert_eq!(links[0][1].latency, Duration::ZERO);
        assert_eq!(links[0][2].latency, ms(1.5));
        assert_eq!(links[3][0].latency, ms(1.5));
        assert!(net.is_emulated());
    }

    #[test]
    fn five_members_in_three_zones_wrap_round() {
        let net = parse(
            "zones = [\"a\", \"b\", \"c\"]\npeer-latency = \"0.1ms\"\nzone-latency = \"2ms\"\n",
        );
        assert_eq!(net.member_zones(5), ["a", "b", "c", "a", "b"]);
        let links = net.links(5);
        assert_eq!(links[1][4].latency, ms(0.1), "m0 and m3 share zone a");
        assert_eq!(links[1][2].latency, ms(2.0));
    }

    #[test]
    fn the_capacity_tests_client_latencies_per_member() {
        let net = parse(
            "peer-latency = \"10ms\"\nbandwidth = \"100MB/s\"\n\
             [member.m0]\nclient-latency = \"10ms\"\n[member.m1]\nclient-latency = \"10ms\"\n\
             [member.m2]\nclient-latency = \"0.2ms\"\n[member.m3]\nclient-latency = \"8ms\"\n\
             [member.m4]\nclient-latency = \"8ms\"\n",
        );
        net.validate(Site::Local(Some(5))).unwrap();
        let links = net.links(5);
        let to_members: Vec<Duration> = (1..=5).map(|m| links[0][m].latency).collect();
        assert_eq!(to_members, [ms(10.0), ms(10.0), ms(0.2), ms(8.0), ms(8.0)]);
        assert_eq!(links[3][0].latency, ms(0.2), "both directions alike");
        assert_eq!(links[1][2].bandwidth, Some(100_000_000));
        assert_eq!(links[0][1].bandwidth, None, "bandwidth is between members");
    }

    #[test]
    fn a_zone_pair_overrides_the_zone_latency() {
        let net = parse(
            "zones = [\"a\", \"b\", \"c\"]\nzone-latency = \"1ms\"\n\
             [[zone-pair]]\nbetween = [\"c\", \"a\"]\nlatency = \"30ms\"\nbandwidth = \"1Gbit/s\"\n",
        );
        net.validate(Site::Local(Some(3))).unwrap();
        let links = net.links(3);
        assert_eq!(links[1][3].latency, ms(30.0));
        assert_eq!(links[3][1].bandwidth, Some(125_000_000));
        assert_eq!(links[1][2].latency, ms(1.0));
        assert_eq!(links[0][3].latency, ms(30.0), "the client is in a");
    }

    #[test]
    fn the_summary_says_each_setting_once() {
        let net = parse(
            "zones = [\"a\", \"b\", \"c\"]\nzone-latency = \"1.5ms\"\nbandwidth = \"100MB/s\"\n\
             [member.m2]\nclient-latency = \"10ms\"\n",
        );
        assert_eq!(
            net.summary(),
            "peers 0s, client 0s, 100MB/s between members; zones a, b, c (client in a) 1ms 500us apart; m2 10ms from the client"
        );
    }

    #[test]
    fn nothing_set_emulates_nothing() {
        let net = Network::default();
        assert!(!net.is_emulated());
        assert!(net.is_empty());
        assert!(!parse("zones = [\"a\", \"b\"]\n").is_emulated(), "zones alone add no delay");
    }

    #[test]
    fn bad_tables_name_what_is_wrong() {
        let local =
            |text: &str| parse(text).validate(Site::Local(Some(3))).unwrap_err().to_string();
        assert!(local("zones = [\"a\", \"b\", \"c\", \"d\"]\n").contains("4 zones for 3 member"));
        assert!(local("zones = [\"a\", \"a\"]\n").contains("listed twice"));
        assert!(local("zones = [\"a\"]\nclient-zone = \"z\"\n").contains("no zone \"z\""));
        assert!(local("[member.m7]\nclient-latency = \"1ms\"\n").contains("no member \"m7\""));
        assert!(local("toxiproxy = \"http://127.0.0.1:8474\"\n").contains("did not start"));
        assert!(local("[[zone-pair]]\nbetween = [\"a\", \"b\"]\n").contains("no zones are listed"));
        let remote = parse("peer-latency = \"1ms\"\n").validate(Site::Endpoints).unwrap_err();
        assert!(remote.to_string().contains("not for a cluster given by endpoints"), "{remote}");
        // Until the command line has said how many members, four zones may be right.
        parse("zones = [\"a\", \"b\", \"c\", \"d\"]\n").validate(Site::Local(None)).unwrap();
        // Until it is known where it runs, toxiproxy and emulation may both be right.
        parse("toxiproxy = \"http://127.0.0.1:8474\"\n").validate(Site::Unknown).unwrap();
        parse("peer-latency = \"1ms\"\n").validate(Site::Unknown).unwrap();
        assert!(toml::from_str::<Network>("peer-latency = \"-1ms\"\n").is_err());
        assert!(toml::from_str::<Network>("bandwidth = \"fast\"\n").is_err());
        assert!(toml::from_str::<Network>("latency = \"1ms\"\n").is_err(), "unknown key");
    }
}
