//! A run's findings on the page: where it crossed etcd's guidance or was bound by something
//! other than the load ([`Report::findings`]), one row each, once, near the top of the run.

use super::*;

impl Page {
    /// The findings' table, when there are any.
    pub(super) fn findings(&mut self, run: &Report) {
        let found = run.findings();
        if found.is_empty() {
            return;
        }
        self.heading(3, "Findings");
        let rows = found
            .iter()
            .map(|f| {
                vec![
                    cell(f.member.as_deref().unwrap_or(MISSING)),
                    Cell { text: f.shown(f.value), numeric: true, bad: true },
                    num(f.shown(f.guidance)),
                    cell(&f.text),
                ]
            })
            .collect();
        self.table(&["Member", "Figure", "Guidance", "Finding"], rows);
    }
}
