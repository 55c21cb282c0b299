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

    pub(crate) fn is_cancelled(&self) -> bool {
        *self.tx.borrow()
    }

    /// A handle of its own that this one's `cancel` also triggers (one run's stop within
    /// a suite's): the forwarding task ends with the returned guard.
    pub fn child(&self) -> (CancelHandle, ChildGuard) {
        let child = CancelHandle::new();
        let (parent, tx) = (self.clone(), child.tx.clone());
        let task = tokio::spawn(async move {
            cancelled(&parent).await;
            tx.send_replace(true);
        });
        (child, ChildGuard(task))
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

/// Ends a child handle's forwarding when dropped.
#[derive(Debug)]
pub struct ChildGuard(tokio::task::JoinHandle<()>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}
