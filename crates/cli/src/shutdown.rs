//! The stop flag: Ctrl-C, SIGTERM and SIGHUP set it, and whatever is under way when it is
//! set ends early (a run with its report, a starting cluster at once).

use std::future::Future;

use tokio::sync::watch;

/// A flag that turns true on Ctrl-C, SIGTERM or SIGHUP (the terminal closed): each stops
/// the run, writes the report and tears down local clusters, whose etcd processes run in a
/// process group of their own and would otherwise outlive etcdlat.
pub fn shutdown_signal() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        #[cfg(unix)]
        let other = async {
            use tokio::signal::unix::{SignalKind, signal};
            match (signal(SignalKind::terminate()), signal(SignalKind::hangup())) {
                (Ok(mut term), Ok(mut hup)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = hup.recv() => {}
                    }
                }
                _ => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let other = std::future::pending::<()>();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = other => {}
        }
        tracing::info!("stopping: signal received");
        let _ = tx.send(true);
    });
    rx
}

/// Completes with `None` as soon as the stop flag is set.
pub async fn unless_stopped<T>(
    stop: &watch::Receiver<bool>,
    work: impl Future<Output = T>,
) -> Option<T> {
    let mut stop = stop.clone();
    tokio::select! {
        out = work => Some(out),
        _ = stop.wait_for(|s| *s) => None,
    }
}
