//! The boxed future of [`DynMemory`](super::DynMemory), the object-safe form of
//! [`Memory`](super::Memory). Both traits and the forwarding between them are generated from one
//! method list in the [parent module](super).

use std::future::Future;
use std::pin::Pin;

/// A boxed `Send` future.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
