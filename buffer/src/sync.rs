//! The one lock the snapshot registry and the version store use, swappable for shuttle's under
//! the `shuttle` feature so that `tests/snapshot_shuttle.rs` model-checks them.

#[cfg(not(feature = "shuttle"))]
pub(crate) use parking_lot::Mutex;

#[cfg(feature = "shuttle")]
pub(crate) use shuttled::Mutex;

#[cfg(feature = "shuttle")]
mod shuttled {
    /// shuttle's mutex with parking_lot's `lock` (no poisoning to unwrap).
    #[derive(Debug, Default)]
    pub(crate) struct Mutex<T>(shuttle::sync::Mutex<T>);

    pub(crate) type MutexGuard<'a, T> = shuttle::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        pub(crate) fn new(t: T) -> Self {
            Self(shuttle::sync::Mutex::new(t))
        }

        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
        }
    }
}
