//! Stopping a run from outside: a handle the suite triggers (Ctrl-C), and the future the
//! load loop waits on.

use tokio::sync::watch;

/// Stops a run: no new requests; in-flight ones get the grace period. Cheap to clone;
/// the suite triggers it on Ctrl-C.
#[derive(Debug, Clone)]
pub struct CancelHandle {
    pub(super) tx: watch::Sender<bool>,
}

impl Default for CancelHandle {
    fn default() -> Self {
        CancelHandle::new()
    }
}

impl CancelHandle {
    pub fn new() -> CancelHandle {
        CancelHandle {
            tx: watch::channel(false).0,
        }
    }

    pub fn cancel(&self) {
        self.tx.send_replace(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.tx.borrow()
    }
}

/// Completes once `cancel` is triggered.
pub(super) async fn cancelled(cancel: &CancelHandle) {
    let mut rx = cancel.tx.subscribe();
    // An error means the handle is gone: it can no longer be cancelled.
    if rx.wait_for(|c| *c).await.is_err() {
        std::future::pending::<()>().await;
    }
}
