//! The catalog: what a store knows about the workflows it holds, so that tools (the
//! `orchestrator` command, a web console) can show them without the user's code.
//!
//! When a [`Node`](crate::runtime::Node) starts, it records in its store's catalog (when the
//! store keeps one: [`Memory::catalog`](super::Memory::catalog)) a [`Definition`] of each
//! orchestrator and resumable version it runs (its chart, exported, and the contracts it uses)
//! and of each contract version involved (Arvo's `toJsonSchema()` document). Recording a
//! definition again replaces it: the catalog holds what the latest node to start said.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use serde_json::Value;

use super::MemoryError;
use super::dynamic::BoxFuture;

/// What a [`Definition`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DefinitionKind {
    /// A contract version: the document is Arvo's `VersionedArvoContract.toJsonSchema()`.
    Contract,
    /// An orchestrator version (a `machine!` or a resumable): the document says which machine
    /// it is, the contracts it uses, and its chart (see [`Definition::document`]).
    Orchestrator,
}

impl DefinitionKind {
    /// `contract` or `orchestrator`, as stores keep it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Contract => "contract",
            Self::Orchestrator => "orchestrator",
        }
    }

    /// The kind named `name` (as [`DefinitionKind::as_str`] writes it).
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "contract" => Some(Self::Contract),
            "orchestrator" => Some(Self::Orchestrator),
            _ => None,
        }
    }
}

/// One entry of a [`Catalog`], identified by its kind, name and version.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    /// What it describes.
    pub kind: DefinitionKind,
    /// A contract's accepted event type (`com.calc.add`), or an orchestrator's
    /// (`arvo.orc.shop.order`).
    pub name: String,
    /// The contract's version (`1.0.0`).
    pub version: String,
    /// The JSON document. For an orchestrator:
    /// `{"machine": NAME or null, "resumable": bool, "contract": {"type", "uri", "version"},
    /// "services": [{"name", "type", "version"}], "chart": {"xstate", "mermaid", "dot"} or null}`
    /// (the chart exported by the library the user's program runs).
    pub document: Value,
}

/// A [`Definition`] as the catalog holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The definition.
    pub definition: Definition,
    /// When it was last recorded (the store's clock).
    pub recorded_at: SystemTime,
}

/// The catalog of a store: what tools need to show its workflows without the user's code. A
/// [`Node`](crate::runtime::Node) records there, when it starts, a [`Definition`] of each
/// orchestrator and resumable version it runs (its chart, exported, and the contracts it uses)
/// and of each contract version involved (Arvo's `toJsonSchema()` document); recording a
/// definition again replaces it.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use orchestrator::memory::{Catalog, Definition, DefinitionKind, InMemory};
///
/// let store = InMemory::<String>::default();
/// let add = Definition {
///     kind: DefinitionKind::Contract,
///     name: "com.calc.add".to_owned(),
///     version: "1.0.0".to_owned(),
///     document: serde_json::json!({ "accepts": { "type": "com.calc.add" } }),
/// };
/// store.record(std::slice::from_ref(&add)).await?;
/// let recorded = store.definitions().await?;
/// assert_eq!(recorded[0].definition, add);
/// # Ok::<(), orchestrator::memory::MemoryError>(())
/// # }).unwrap();
/// ```
pub trait Catalog: Send + Sync {
    /// Records `definitions` in one step: each replaces the one with the same kind, name and
    /// version.
    fn record(&self, definitions: &[Definition]) -> impl Future<Output = Result<(), MemoryError>> + Send;

    /// Every definition, ordered by kind (contracts first), name and version as text.
    fn definitions(&self) -> impl Future<Output = Result<Vec<Recorded>, MemoryError>> + Send;
}

/// Object-safe [`Catalog`] (what [`Memory::catalog`](super::Memory::catalog) returns).
pub trait DynCatalog: Send + Sync {
    /// See [`Catalog::record`].
    fn record_dyn<'a>(&'a self, definitions: &'a [Definition]) -> BoxFuture<'a, Result<(), MemoryError>>;
    /// See [`Catalog::definitions`].
    fn definitions_dyn(&self) -> BoxFuture<'_, Result<Vec<Recorded>, MemoryError>>;
}

impl<C: Catalog> DynCatalog for C {
    fn record_dyn<'a>(&'a self, definitions: &'a [Definition]) -> BoxFuture<'a, Result<(), MemoryError>> {
        Box::pin(self.record(definitions))
    }

    fn definitions_dyn(&self) -> BoxFuture<'_, Result<Vec<Recorded>, MemoryError>> {
        Box::pin(self.definitions())
    }
}

impl<C: Catalog + ?Sized> Catalog for std::sync::Arc<C> {
    async fn record(&self, definitions: &[Definition]) -> Result<(), MemoryError> {
        (**self).record(definitions).await
    }

    async fn definitions(&self) -> Result<Vec<Recorded>, MemoryError> {
        (**self).definitions().await
    }
}

/// Sorts `recorded` as [`Catalog::definitions`] returns them.
fn sort(recorded: &mut [Recorded]) {
    recorded.sort_by(|a, b| {
        let key = |r: &Recorded| (r.definition.kind, r.definition.name.clone(), r.definition.version.clone());
        key(a).cmp(&key(b))
    });
}

/// The catalog of an in-process store: definitions by kind, name and version.
#[derive(Debug, Default)]
pub(crate) struct CatalogMap(Mutex<BTreeMap<(DefinitionKind, String, String), Recorded>>);

impl CatalogMap {
    /// Records `definitions` at `now`.
    pub(crate) fn record(&self, definitions: &[Definition], now: SystemTime) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for definition in definitions {
            let key = (definition.kind, definition.name.clone(), definition.version.clone());
            map.insert(key, Recorded { definition: definition.clone(), recorded_at: now });
        }
    }

    /// Every definition, in the catalog's order.
    pub(crate) fn definitions(&self) -> Vec<Recorded> {
        let mut recorded: Vec<Recorded> =
            self.0.lock().unwrap_or_else(PoisonError::into_inner).values().cloned().collect();
        sort(&mut recorded);
        recorded
    }
}
