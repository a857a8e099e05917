//! The machine a run ran on ([`Machine`]): its CPUs, memory, load and kernel, and whether
//! the client, the emulated network and the members shared CPUs.

use serde::{Deserialize, Serialize};

/// The machine the client ran on, read when the run started: figures that explain a
/// difference between two runs that their settings do not (another machine, a busy one, the
/// client and etcd fighting for the same cores).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[non_exhaustive]
pub struct Machine {
    /// CPUs the OS has online (`sysconf(_SC_NPROCESSORS_ONLN)`).
    pub cpus: u32,
    /// Memory, bytes (`/proc/meminfo` `MemTotal`); `None` off Linux.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_bytes: Option<u64>,
    /// Memory available when the run started, bytes (`MemAvailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_available_bytes: Option<u64>,
    /// The load average over 1, 5 and 15 minutes when the run started (`/proc/loadavg`):
    /// runnable and waiting tasks, busy before this run's load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_average: Option<[f64; 3]>,
    /// The kernel: its name and release (`uname -sr`), `Linux 6.1.0-18-amd64`.
    pub kernel: String,
    /// The CPUs the client's worker threads may run on (those given with `--pin-cpus`, else
    /// the process's); empty when the OS does not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub client_cpus: Vec<usize>,
    /// The CPUs the emulated network's threads may run on; empty without an emulated
    /// network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub emulator_cpus: Vec<usize>,
    /// The CPUs the members may run on, together; empty when etcdlat did not start them
    /// (their processes are not known here).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub member_cpus: Vec<usize>,
    /// Which of the client, the emulator and the members could run on one CPU at once,
    /// named in pairs (`client and members`); empty when none shared one. `None` when it
    /// is not known (the members' CPUs are not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_cpus: Option<Vec<String>>,
}

impl Machine {
    /// Which of the client, the emulator and the members share a CPU, from their CPUs;
    /// `None` when the client's or the members' are not known.
    #[must_use]
    pub fn sharing(client: &[usize], emulator: &[usize], members: &[usize]) -> Option<Vec<String>> {
        if client.is_empty() || members.is_empty() {
            return None;
        }
        let meet = |a: &[usize], b: &[usize]| a.iter().any(|c| b.contains(c));
        let parts = [("client", client), ("emulator", emulator), ("members", members)];
        let mut shared = Vec::new();
        for (i, (a, a_cpus)) in parts.iter().enumerate() {
            for (b, b_cpus) in &parts[i + 1..] {
                if meet(a_cpus, b_cpus) {
                    shared.push(format!("{a} and {b}"));
                }
            }
        }
        Some(shared)
    }

    /// The machine in one line, for people: `4 CPUs, 15.6 GB memory (9.2 GB available),
    /// load average 0.52 0.40 0.33, Linux 6.1.0; client and members share CPUs`.
    #[must_use]
    pub fn summary(&self) -> String {
        let gb = |b: u64| format!("{:.1} GB", b as f64 / 1e9);
        let mut line = format!("{} CPU{}", self.cpus, if self.cpus == 1 { "" } else { "s" });
        if let Some(total) = self.memory_bytes {
            line.push_str(&format!(", {} memory", gb(total)));
            if let Some(available) = self.memory_available_bytes {
                line.push_str(&format!(" ({} available)", gb(available)));
            }
        }
        if let Some([one, five, fifteen]) = self.load_average {
            line.push_str(&format!(", load average {one:.2} {five:.2} {fifteen:.2}"));
        }
        if !self.kernel.is_empty() {
            line.push_str(&format!(", {}", self.kernel));
        }
        match &self.shared_cpus {
            Some(shared) if shared.is_empty() => {
                line.push_str("; client, emulator and members on CPUs of their own");
            }
            Some(shared) => line.push_str(&format!("; {} share CPUs", shared.join(", "))),
            None => {}
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_that_may_run_on_one_cpu_share_it() {
        assert_eq!(
            Machine::sharing(&[0, 1], &[], &[0, 1]),
            Some(vec!["client and members".to_owned()])
        );
        assert_eq!(Machine::sharing(&[0], &[1], &[2, 3]), Some(vec![]));
        assert_eq!(
            Machine::sharing(&[0], &[1], &[1, 2]),
            Some(vec!["emulator and members".to_owned()])
        );
        assert_eq!(Machine::sharing(&[0], &[], &[]), None, "members not known");
    }

    #[test]
    fn a_machine_reads_in_one_line() {
        let m = Machine {
            cpus: 4,
            memory_bytes: Some(16_000_000_000),
            memory_available_bytes: Some(9_200_000_000),
            load_average: Some([0.52, 0.4, 0.333]),
            kernel: "Linux 6.1.0".to_owned(),
            shared_cpus: Some(vec!["client and members".to_owned()]),
            ..Machine::default()
        };
        assert_eq!(
            m.summary(),
            "4 CPUs, 16.0 GB memory (9.2 GB available), load average 0.52 0.40 0.33, \
             Linux 6.1.0; client and members share CPUs"
        );
    }
}
