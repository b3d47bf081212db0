//! The object-safe form of [`Memory`], to pick a backend at run time.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use std::time::SystemTime;

use super::{Lease, Lookup, Memory, MemoryError, Stored, Wake, WriteMeta};
use crate::event::Event;

/// A boxed `Send` future.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Object-safe [`Memory`]: every [`Memory`] is a `DynMemory`, and `Arc<dyn DynMemory<R>>` is a
/// [`Memory`] again.
///
/// ```
/// use std::sync::Arc;
/// use orchestrator::memory::{DynMemory, InMemory};
/// let memory: Arc<dyn DynMemory<String>> = Arc::new(InMemory::<String>::default());
/// # let _ = memory;
/// ```
pub trait DynMemory<R>: Send + Sync {
    /// See [`Memory::read`].
    fn read_dyn<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Stored<R>>, MemoryError>>;
    /// See [`Memory::write`].
    fn write_dyn<'a>(
        &'a self,
        id: &'a str,
        record: &'a R,
        prev: Option<u64>,
        lease: Option<&'a Lease>,
        meta: &'a WriteMeta<'a>,
    ) -> BoxFuture<'a, Result<u64, MemoryError>>;
    /// See [`Memory::read_shared`].
    fn read_shared_dyn<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Stored<Arc<R>>>, MemoryError>>;
    /// See [`Memory::write_owned`].
    fn write_owned_dyn<'a>(
        &'a self,
        id: &'a str,
        record: R,
        prev: Option<u64>,
        lease: Option<&'a Lease>,
        meta: &'a WriteMeta<'a>,
    ) -> BoxFuture<'a, Result<u64, MemoryError>>;
    /// See [`Memory::due`].
    fn due_dyn(&self, now: SystemTime, limit: usize) -> BoxFuture<'_, Result<Vec<Wake>, MemoryError>>;
    /// See [`Memory::produced`].
    fn produced_dyn<'a>(
        &'a self,
        id: &'a str,
        event_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<Event>>, MemoryError>>;
    /// See [`Memory::lookup`].
    fn lookup_dyn<'a>(
        &'a self,
        id: &'a str,
        event_id: &'a str,
    ) -> BoxFuture<'a, Result<Lookup<R>, MemoryError>>;
    /// See [`Memory::lock`].
    fn lock_dyn<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Lease>, MemoryError>>;
    /// See [`Memory::unlock`].
    fn unlock_dyn<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<bool, MemoryError>>;
    /// See [`Memory::cleanup`].
    fn cleanup_dyn<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), MemoryError>>;
}

impl<R: Sync + Send + 'static, M: Memory<R>> DynMemory<R> for M {
    fn read_dyn<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Stored<R>>, MemoryError>> {
        Box::pin(self.read(id))
    }
    fn write_dyn<'a>(
        &'a self,
        id: &'a str,
        record: &'a R,
        prev: Option<u64>,
        lease: Option<&'a Lease>,
        meta: &'a WriteMeta<'a>,
    ) -> BoxFuture<'a, Result<u64, MemoryError>> {
        Box::pin(self.write(id, record, prev, lease, meta))
    }
    fn read_shared_dyn<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Stored<Arc<R>>>, MemoryError>> {
        Box::pin(self.read_shared(id))
    }
    fn write_owned_dyn<'a>(
        &'a self,
        id: &'a str,
        record: R,
        prev: Option<u64>,
        lease: Option<&'a Lease>,
        meta: &'a WriteMeta<'a>,
    ) -> BoxFuture<'a, Result<u64, MemoryError>> {
        Box::pin(self.write_owned(id, record, prev, lease, meta))
    }
    fn due_dyn(&self, now: SystemTime, limit: usize) -> BoxFuture<'_, Result<Vec<Wake>, MemoryError>> {
        Box::pin(self.due(now, limit))
    }
    fn produced_dyn<'a>(
        &'a self,
        id: &'a str,
        event_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<Event>>, MemoryError>> {
        Box::pin(self.produced(id, event_id))
    }
    fn lookup_dyn<'a>(
        &'a self,
        id: &'a str,
        event_id: &'a str,
    ) -> BoxFuture<'a, Result<Lookup<R>, MemoryError>> {
        Box::pin(self.lookup(id, event_id))
    }
    fn lock_dyn<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Lease>, MemoryError>> {
        Box::pin(self.lock(id))
    }
    fn unlock_dyn<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<bool, MemoryError>> {
        Box::pin(self.unlock(lease))
    }
    fn cleanup_dyn<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(self.cleanup(id))
    }
}

// `Arc<dyn DynMemory<R>>` is itself a `DynMemory<R>` (through the blanket impl above), so every
// method dispatches on the pointee (`**self`); calling `self.read_dyn` would recurse forever.
impl<R: Sync + Send + 'static> Memory<R> for Arc<dyn DynMemory<R>> {
    async fn read(&self, id: &str) -> Result<Option<Stored<R>>, MemoryError> {
        (**self).read_dyn(id).await
    }
    async fn write(
        &self,
        id: &str,
        record: &R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> Result<u64, MemoryError> {
        (**self).write_dyn(id, record, prev, lease, meta).await
    }
    async fn read_shared(&self, id: &str) -> Result<Option<Stored<Arc<R>>>, MemoryError> {
        (**self).read_shared_dyn(id).await
    }
    async fn write_owned(
        &self,
        id: &str,
        record: R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> Result<u64, MemoryError> {
        (**self).write_owned_dyn(id, record, prev, lease, meta).await
    }
    async fn due(&self, now: SystemTime, limit: usize) -> Result<Vec<Wake>, MemoryError> {
        (**self).due_dyn(now, limit).await
    }
    async fn produced(&self, id: &str, event_id: &str) -> Result<Option<Vec<Event>>, MemoryError> {
        (**self).produced_dyn(id, event_id).await
    }
    async fn lookup(&self, id: &str, event_id: &str) -> Result<Lookup<R>, MemoryError> {
        (**self).lookup_dyn(id, event_id).await
    }
    async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
        (**self).lock_dyn(id).await
    }
    async fn unlock(&self, lease: &Lease) -> Result<bool, MemoryError> {
        (**self).unlock_dyn(lease).await
    }
    async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
        (**self).cleanup_dyn(id).await
    }
}

/// A shared backend is a backend: `Arc<M>` forwards to `M`, so one store can serve several
/// orchestrators, or outlive them (a "restart" over the same memory).
impl<R: Sync + Send + 'static, M: Memory<R>> Memory<R> for Arc<M> {
    async fn read(&self, id: &str) -> Result<Option<Stored<R>>, MemoryError> {
        (**self).read(id).await
    }
    async fn write(
        &self,
        id: &str,
        record: &R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> Result<u64, MemoryError> {
        (**self).write(id, record, prev, lease, meta).await
    }
    async fn read_shared(&self, id: &str) -> Result<Option<Stored<Arc<R>>>, MemoryError> {
        (**self).read_shared(id).await
    }
    async fn write_owned(
        &self,
        id: &str,
        record: R,
        prev: Option<u64>,
        lease: Option<&Lease>,
        meta: &WriteMeta<'_>,
    ) -> Result<u64, MemoryError> {
        (**self).write_owned(id, record, prev, lease, meta).await
    }
    async fn lock(&self, id: &str) -> Result<Option<Lease>, MemoryError> {
        (**self).lock(id).await
    }
    async fn unlock(&self, lease: &Lease) -> Result<bool, MemoryError> {
        (**self).unlock(lease).await
    }
    async fn due(&self, now: SystemTime, limit: usize) -> Result<Vec<Wake>, MemoryError> {
        (**self).due(now, limit).await
    }
    async fn produced(&self, id: &str, event_id: &str) -> Result<Option<Vec<Event>>, MemoryError> {
        (**self).produced(id, event_id).await
    }
    async fn lookup(&self, id: &str, event_id: &str) -> Result<Lookup<R>, MemoryError> {
        (**self).lookup(id, event_id).await
    }
    async fn cleanup(&self, id: &str) -> Result<(), MemoryError> {
        (**self).cleanup(id).await
    }
}
