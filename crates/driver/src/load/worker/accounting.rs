//! What a request's outcome updates, in one place: the worker's recorder (its kind's
//! figures, the member that answered, what it read or wrote, the apiserver's (resource,
//! verb) row), its client step's figures and the steps' count of requests in flight, and
//! its audit record; or, when the request is abandoned unanswered, that it was. The client
//! loop makes one [`Accounting`] per request and settles it once, whatever features the run
//! has on.

use std::cell::RefCell;
use std::time::Instant;

use etcdlat_core::{ErrorCode, OpKind, Recorder};

use super::ABANDONED;
use crate::load::audit_log::Recording;
use crate::load::completion::Done;
use crate::load::kubernetes;
use crate::load::step::StepState;

/// One request's accounting, from its issue to its outcome. On the client's stack: nothing
/// allocated, no lock; the recorder's `RefCell` is borrowed only inside
/// [`Accounting::settle`] (and its drop), never across an await.
///
/// Dropped unsettled (its client's task aborted after the grace at a stop or the run's
/// end), a sent request records itself as abandoned: a `Cancelled` failure of its kind,
/// with how long it had been out ([`Recorder::record_abandoned`]). An apiserver request's
/// (resource, verb) row and its client step leave it out (whether it would have met its SLO
/// is unknown; the step counts it at the job's end, issued minus recorded).
pub(super) struct Accounting<'a> {
    pub(super) recorder: &'a RefCell<Recorder>,
    /// The run's client steps, when it has them.
    pub(super) steps: Option<&'a StepState>,
    pub(super) kind: OpKind,
    /// The client step the request was claimed in.
    pub(super) step: Option<usize>,
    /// The apiserver's (resource, verb) row it is recorded in, for an apiserver request.
    pub(super) k8s: Option<kubernetes::Recorded>,
    /// Its intended start and its send time; `None` when it could not be sent (its
    /// unmeasured preparation failed).
    pub(super) times: Option<(Instant, Instant)>,
    /// Its audit record, when the run is audited and the request was sent.
    pub(super) audit: Option<Recording<'a>>,
}

impl<'a> Accounting<'a> {
    /// The audit record the request's operation fills in as it picks its keys.
    #[inline]
    pub(super) fn audit(&self) -> Option<&Recording<'a>> {
        self.audit.as_ref()
    }

    /// Records the request's outcome, which arrived now: in the audit, the recorder and its
    /// client step; then tells the steps it is answered.
    #[inline]
    pub(super) fn settle(self, result: Result<Done, tonic::Status>) {
        let done = Instant::now();
        if let Some(audit) = &self.audit {
            audit.finish(&result, done);
        }
        let mut rec = self.recorder.borrow_mut();
        let ok = match result {
            Ok(d) => Some(self.succeeded(&mut rec, &d, done)),
            Err(status) => {
                self.failed(&mut rec, &status, done);
                None
            }
        };
        if let Some(k) = self.step {
            match ok {
                Some(intended) => rec.record_step_ok(k, intended, done),
                None => rec.record_step_errors(k, 1, done),
            }
        }
        drop(rec);
        if let (Some(k), Some(steps)) = (self.step, self.steps) {
            steps.answered(k);
        }
        // Settled: nothing for the drop to record. It owns nothing that needs dropping
        // (references, `Copy` values and an audit record that borrows its log).
        std::mem::forget(self);
    }

    /// Records a success answered at `done`; returns its intended start.
    #[inline]
    fn succeeded(&self, rec: &mut Recorder, d: &Done, done: Instant) -> Instant {
        let Some((intended, sent)) = self.times else {
            unreachable!("a request that was never sent cannot succeed")
        };
        let kind = self.kind;
        rec.record_ok(kind, intended, sent, done);
        if let Some(first) = d.first_message {
            rec.record_ok(OpKind::RangeFirst, intended, sent, first);
        }
        rec.record_member(d.member, intended, done);
        rec.record_payload(kind, d.keys, d.value_bytes);
        if d.retries > 0 {
            rec.record_retries(kind, d.retries);
        }
        if d.conflicts + d.pages > 0 {
            rec.record_conflicts_and_pages(kind, d.conflicts, d.pages);
        }
        if let Some(r) = self.k8s {
            rec.record_request_ok(r.slot, intended, done, d.pages, d.conflicts, d.retries);
            if d.pages > 0 {
                let (over, slowest) = (d.slow_pages, d.slowest_page_us);
                rec.record_page_calls(r.slot, d.pages, over, slowest, d.keys);
            }
            if let Some(objects) = r.renewed_of {
                rec.record_renewal(r.slot, d.object, objects, done);
            }
        }
        intended
    }

    /// Records a failure answered (or found before sending) at `done`.
    #[inline]
    fn failed(&self, rec: &mut Recorder, status: &tonic::Status, done: Instant) {
        let code = code(status);
        rec.record_error(self.kind, code, done);
        rec.record_error_message(self.kind, code, status.message());
        if let Some(r) = self.k8s {
            rec.record_request_error(r.slot, code, kubernetes::compacted(status));
        }
    }
}

impl Drop for Accounting<'_> {
    fn drop(&mut self) {
        let Some((intended, _)) = self.times else { return };
        // Never held across the request's await; if it were, the worker counts the request
        // as abandoned without its time (issued minus recorded, at the job's end).
        let Ok(mut rec) = self.recorder.try_borrow_mut() else { return };
        rec.record_abandoned(self.kind, intended, Instant::now());
        rec.record_error_message(self.kind, ErrorCode::Cancelled, ABANDONED);
    }
}

/// A gRPC status's code, as the recorder counts it.
fn code(status: &tonic::Status) -> ErrorCode {
    ErrorCode::from_grpc(status.code() as i32)
}
