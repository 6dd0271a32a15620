//! How a result reaches whoever waits for it: a waiter blocked in [`Pending::wait`], or a
//! callback run on the receive thread.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::ClientError;

type Callback<T> = Box<dyn FnOnce(Result<T, ClientError>) + Send>;

pub(crate) enum Slot<T> {
    Waiting,
    Ready(Result<T, ClientError>),
    Taken,
}

pub(crate) enum Completion<T> {
    Waiter(Arc<(Mutex<Slot<T>>, Condvar)>),
    Callback(Callback<T>),
}

impl<T> Completion<T> {
    pub fn waiter() -> Self {
        Completion::Waiter(Arc::new((Mutex::new(Slot::Waiting), Condvar::new())))
    }

    pub fn callback(callback: impl FnOnce(Result<T, ClientError>) + Send + 'static) -> Self {
        Completion::Callback(Box::new(callback))
    }

    /// The handle a caller waits on (a callback completion has none to wait for).
    pub fn pending(&self) -> Pending<T> {
        match self {
            Completion::Waiter(slot) => Pending { slot: slot.clone() },
            Completion::Callback(_) => unreachable!("callbacks have no pending handle"),
        }
    }

    pub fn complete(self, result: Result<T, ClientError>) {
        match self {
            Completion::Waiter(slot) => {
                let (value, ready) = &*slot;
                *value.lock().unwrap_or_else(|p| p.into_inner()) = Slot::Ready(result);
                ready.notify_all();
            }
            Completion::Callback(callback) => callback(result),
        }
    }
}

/// A result on its way.
pub struct Pending<T> {
    slot: Arc<(Mutex<Slot<T>>, Condvar)>,
}

impl<T> Pending<T> {
    /// Whether the result has arrived.
    pub fn is_ready(&self) -> bool {
        matches!(
            *self.slot.0.lock().unwrap_or_else(|p| p.into_inner()),
            Slot::Ready(_)
        )
    }

    /// Waits for the result.
    pub fn wait(self) -> Result<T, ClientError> {
        self.wait_timeout(Duration::MAX)
    }

    /// Waits at most `timeout`; a result that does not come in time is reported as a lost
    /// connection (its outcome is unknown).
    pub fn wait_timeout(self, timeout: Duration) -> Result<T, ClientError> {
        let (value, ready) = &*self.slot;
        let deadline = Instant::now().checked_add(timeout);
        let mut slot = value.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if matches!(*slot, Slot::Ready(_)) {
                let Slot::Ready(result) = std::mem::replace(&mut *slot, Slot::Taken) else {
                    unreachable!("just matched");
                };
                return result;
            }
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(3600),
            };
            if left.is_zero() {
                return Err(ClientError::ConnectionLost(format!(
                    "no answer within {} ms",
                    timeout.as_millis()
                )));
            }
            slot = ready
                .wait_timeout(slot, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}
