//! The faults' section: what each fault step did to the service.

use std::fmt::Write;

use super::Writer;

impl Writer<'_> {
    /// One block per fault step: what it did, the unavailability window, the first write
    /// after it, and the load before, during and after it.
    pub(super) fn faults(&mut self, faults: &[etcdlat_core::fault::FaultReport]) {
        self.out.push_str("\nFaults:\n");
        for f in faults {
            let _ = writeln!(
                self.out,
                "  {}. {} at {:.3} s (started {:.3} s):\t{}",
                f.step + 1,
                f.action,
                f.at_s,
                f.started_s,
                f.what
            );
            if let Some(e) = &f.error {
                let _ = writeln!(self.out, "     not done:\t{e}");
            }
            let at = |t: Option<f64>| t.map_or_else(|| "-".to_owned(), |t| format!("{t:.3} s"));
            let _ = writeln!(
                self.out,
                "     unavailable:\t{:.3} s (last success {}, first after {}), first write after {}",
                f.unavailable_s,
                at(f.last_success_before_s),
                at(f.first_success_after_s),
                f.first_write_after_s.map_or_else(|| "-".to_owned(), |t| format!("{t:.3} s")),
            );
            for (label, w) in [("before", &f.before), ("during", &f.during), ("after", &f.after)] {
                let _ = write!(
                    self.out,
                    "     {label}:\t{:.1}-{:.1} s, {} ok, {} errors, {:.1}/s, p99 ",
                    w.from_s, w.to_s, w.ok, w.errors, w.throughput
                );
                self.secs_us(w.p99_us as f64);
                self.out.push('\n');
            }
        }
    }
}
