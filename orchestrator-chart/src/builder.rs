//! [`ChartBuilder`]: the one way to make a [`Chart`], used by the JSON loader and by the
//! `machine!` code generator.
//!
//! States are added under their parent in document order; transitions, initial targets,
//! history defaults and `In` guards name states by **absolute path** and are resolved by
//! [`ChartBuilder::build`], so forward references are fine. Every structural mistake is a typed
//! [`BuildError`].
//!
//! ```
//! use orchestrator_chart::{ChartBuilder, NodeKind, TransitionSpec};
//!
//! let mut b = ChartBuilder::new("m");
//! let root = b.root();
//! let a = b.add_state(root, "a", NodeKind::State).unwrap();
//! b.add_state(root, "b", NodeKind::Final).unwrap();
//! b.add_transition(a, TransitionSpec::on("go").target("b")).unwrap();
//! let chart = b.build().unwrap();
//! assert_eq!(chart.lookup("b").map(|s| chart.path(s)), Some("b"));
//! ```

use std::sync::Arc;

use indexmap::IndexMap;
use thiserror::Error;

use crate::action::{Action, ActionSpec, DelayId, Guard, GuardSpec};
use crate::bitset::StateSet;
use crate::descriptor::{DescriptorError, EventDescriptor, done_event_name};
use crate::model::{
    AfterTimer, Chart, DefaultTransition, Domain, StateId, StateKind, StateNode, Transition, TransitionId,
    Trigger,
};

/// Most states a chart may have (ids are `u16`).
pub const MAX_STATES: usize = u16::MAX as usize;

/// A state being built (returned by [`ChartBuilder::add_state`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeRef(u32);

/// The kind of a state being added. Whether a [`NodeKind::State`] is atomic or compound follows
/// from whether it gets children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// Atomic, or compound once it has children.
    State,
    /// Parallel: all children (regions) active together.
    Parallel,
    /// Final (no children).
    Final,
    /// History pseudo-state (no children), child of a compound or parallel state.
    History {
        /// Deep (restores active atomic descendants) or shallow (active children).
        deep: bool,
    },
}

/// What a [`TransitionSpec`] reacts to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TriggerSpec {
    /// Events matching any of these descriptors (`name`, `prefix.*`, `*`).
    Events(Vec<String>),
    /// `done.state.<source path>` (XState `onDone`).
    Done,
    /// Eventless (`always`).
    Always,
    /// `after` this many ms in the source state.
    After(u64),
    /// `after` a delay the host computes when the source state is entered
    /// ([`Host::delay`](crate::Host::delay)), shown as `after <name>`. Transitions of one state
    /// with the same name share one timer (the first one's id).
    AfterComputed {
        /// Passed to [`Host::delay`](crate::Host::delay).
        id: DelayId,
        /// Its name: an identifier (`payment_timeout`).
        name: String,
    },
}

/// A transition as given to the builder.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TransitionSpec {
    /// What it reacts to.
    pub trigger: TriggerSpec,
    /// Absolute target paths; empty = targetless.
    pub targets: Vec<String>,
    /// Guard.
    pub guard: Option<GuardSpec>,
    /// Actions, in order.
    pub actions: Vec<ActionSpec>,
    /// `true` = SCXML external: the source is exited and re-entered even when all targets are
    /// inside it. `false` (default) = XState v5 default = SCXML `type="internal"`.
    pub reenter: bool,
}

impl TransitionSpec {
    fn with(trigger: TriggerSpec) -> Self {
        Self { trigger, targets: Vec::new(), guard: None, actions: Vec::new(), reenter: false }
    }
    /// Reacts to events matching `descriptor`.
    pub fn on(descriptor: impl Into<String>) -> Self {
        Self::with(TriggerSpec::Events(vec![descriptor.into()]))
    }
    /// Reacts to events matching any of `descriptors`.
    pub fn on_any(descriptors: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self::with(TriggerSpec::Events(descriptors.into_iter().map(Into::into).collect()))
    }
    /// Reacts to `done.state.<source>`.
    pub fn on_done() -> Self {
        Self::with(TriggerSpec::Done)
    }
    /// Eventless.
    pub fn always() -> Self {
        Self::with(TriggerSpec::Always)
    }
    /// `ms` after the source state was entered.
    pub fn after(ms: u64) -> Self {
        Self::with(TriggerSpec::After(ms))
    }
    /// After the delay the host computes (`Host::delay(id, ..)`) when the source state is
    /// entered; `name` (an identifier) is how exports show it.
    pub fn after_computed(id: DelayId, name: impl Into<String>) -> Self {
        Self::with(TriggerSpec::AfterComputed { id, name: name.into() })
    }
    /// Adds a target (absolute path).
    pub fn target(mut self, path: impl Into<String>) -> Self {
        self.targets.push(path.into());
        self
    }
    /// Adds targets (absolute paths).
    pub fn targets(mut self, paths: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.targets.extend(paths.into_iter().map(Into::into));
        self
    }
    /// Sets the guard.
    pub fn guard(mut self, guard: GuardSpec) -> Self {
        self.guard = Some(guard);
        self
    }
    /// Appends an action.
    pub fn action(mut self, action: ActionSpec) -> Self {
        self.actions.push(action);
        self
    }
    /// Appends actions.
    pub fn actions(mut self, actions: impl IntoIterator<Item = ActionSpec>) -> Self {
        self.actions.extend(actions);
        self
    }
    /// Sets the `reenter` flag.
    pub fn reenter(mut self, reenter: bool) -> Self {
        self.reenter = reenter;
        self
    }
}

/// A structural error found while building a chart. Paths are absolute; `""` is the root.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BuildError {
    /// A state key is empty or contains `.`, `#` or whitespace.
    #[error(
        "invalid state key {key:?} under {parent:?}: keys are non-empty and contain no '.', '#' or spaces"
    )]
    InvalidKey {
        /// Parent path.
        parent: String,
        /// The key.
        key: String,
    },
    /// The name of a computed `after` delay is not an identifier.
    #[error("invalid delay name {name:?} in state {path:?}: a computed delay is named by an identifier")]
    InvalidDelayName {
        /// The state.
        path: String,
        /// The name.
        name: String,
    },
    /// Two states with the same path.
    #[error("duplicate state {path:?}")]
    DuplicateState {
        /// The path.
        path: String,
    },
    /// A [`NodeRef`] from another builder.
    #[error("unknown node reference {0}")]
    UnknownNode(u32),
    /// A child added under a final state.
    #[error("final state {path:?} cannot have child states")]
    FinalWithChildren {
        /// The final state.
        path: String,
    },
    /// A child added under a history state.
    #[error("history state {path:?} cannot have child states")]
    HistoryWithChildren {
        /// The history state.
        path: String,
    },
    /// A history state whose parent is not a compound or parallel state (e.g. the root).
    #[error("history state {path:?} must be the child of a compound or parallel state")]
    HistoryOutsideCompound {
        /// The history state.
        path: String,
    },
    /// The chart has no states besides the root.
    #[error("the chart has no states")]
    EmptyChart,
    /// More than [`MAX_STATES`] states.
    #[error("the chart has {count} states; at most {MAX_STATES} are supported")]
    TooManyStates {
        /// How many.
        count: usize,
    },
    /// A compound state has no non-history child to start in and no usable `initial`.
    #[error("compound state {path:?} has no initial state")]
    MissingInitial {
        /// The state.
        path: String,
    },
    /// Something was declared on a state of the wrong kind.
    #[error("{what} is not allowed on {kind} state {path:?}")]
    NotAllowed {
        /// The state.
        path: String,
        /// Its kind.
        kind: &'static str,
        /// What was declared.
        what: &'static str,
    },
    /// `initial` declared twice.
    #[error("state {path:?} has two initial declarations")]
    DuplicateInitial {
        /// The state.
        path: String,
    },
    /// A target path that names no state.
    #[error("unknown target {target:?} in {context} of state {source_state:?}")]
    UnknownTarget {
        /// The state declaring it.
        source_state: String,
        /// Where: "transition", "initial", "history default".
        context: &'static str,
        /// The unknown path.
        target: String,
    },
    /// An `In` / `NotIn` guard naming no state.
    #[error("unknown state {target:?} in a guard of state {source_state:?}")]
    UnknownGuardState {
        /// The state declaring the guard.
        source_state: String,
        /// The unknown path.
        target: String,
    },
    /// An initial target that is not a proper descendant of its state.
    #[error("initial target {target:?} of {path:?} is not a descendant of it")]
    InitialNotDescendant {
        /// The state.
        path: String,
        /// The target.
        target: String,
    },
    /// A history default target outside the history state's parent.
    #[error("default target {target:?} of history state {path:?} is not inside its parent")]
    HistoryDefaultOutsideParent {
        /// The history state.
        path: String,
        /// The target.
        target: String,
    },
    /// A history state with no default whose parent's initial is the history state itself.
    #[error("history state {path:?} needs a default target")]
    MissingHistoryDefault {
        /// The history state.
        path: String,
    },
    /// A multi-target set that cannot be active together (not in distinct parallel regions).
    #[error("targets {targets:?} of {context} in {source_state:?} cannot be active together")]
    IllegalTargetSet {
        /// The state declaring them.
        source_state: String,
        /// Where: "transition" or "initial".
        context: &'static str,
        /// The targets.
        targets: Vec<String>,
    },
    /// A malformed event descriptor.
    #[error("state {source_state:?}: {error}")]
    Descriptor {
        /// The state declaring it.
        source_state: String,
        /// The descriptor error.
        error: DescriptorError,
    },
    /// A transition with no event descriptor.
    #[error("a transition of state {source_state:?} has no event descriptor")]
    NoDescriptor {
        /// The state declaring it.
        source_state: String,
    },
    /// More than `u16::MAX` distinct `after` delays on one state, or more than `u32::MAX`
    /// transitions.
    #[error("too many transitions or timers on state {path:?}")]
    TooManyTransitions {
        /// The state.
        path: String,
    },
}

#[derive(Debug, Clone)]
struct BTransition {
    trigger: TriggerSpec,
    descriptors: Vec<EventDescriptor>,
    targets: Vec<String>,
    guard: Option<GuardSpec>,
    actions: Vec<ActionSpec>,
    reenter: bool,
}

#[derive(Debug, Clone)]
struct BNode {
    key: String,
    path: String,
    parent: Option<usize>,
    kind: NodeKind,
    children: Vec<usize>,
    initial: Option<(Vec<String>, Vec<ActionSpec>)>,
    history_default: Option<(Vec<String>, Vec<ActionSpec>)>,
    entry: Vec<ActionSpec>,
    exit: Vec<ActionSpec>,
    transitions: Vec<BTransition>,
}

/// Builds a [`Chart`]; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct ChartBuilder {
    machine_id: String,
    nodes: Vec<BNode>,
    by_path: IndexMap<String, usize>,
}

fn kind_name(kind: NodeKind, has_children: bool) -> &'static str {
    match kind {
        NodeKind::State if has_children => "compound",
        NodeKind::State => "atomic",
        NodeKind::Parallel => "parallel",
        NodeKind::Final => "final",
        NodeKind::History { .. } => "history",
    }
}

impl ChartBuilder {
    /// A builder with a compound root for machine `machine_id`.
    pub fn new(machine_id: impl Into<String>) -> Self {
        let root = BNode {
            key: String::new(),
            path: String::new(),
            parent: None,
            kind: NodeKind::State,
            children: Vec::new(),
            initial: None,
            history_default: None,
            entry: Vec::new(),
            exit: Vec::new(),
            transitions: Vec::new(),
        };
        let mut by_path = IndexMap::new();
        by_path.insert(String::new(), 0);
        Self { machine_id: machine_id.into(), nodes: vec![root], by_path }
    }

    /// The root (the machine itself).
    pub fn root(&self) -> NodeRef {
        NodeRef(0)
    }

    /// Makes the root a parallel state (XState `type: "parallel"` on the machine).
    pub fn set_root_parallel(&mut self) {
        self.nodes[0].kind = NodeKind::Parallel;
    }

    /// The node at an absolute path, if added.
    pub fn node(&self, path: &str) -> Option<NodeRef> {
        self.by_path.get(path).map(|i| NodeRef(*i as u32))
    }

    /// The absolute path of a node.
    pub fn path_of(&self, node: NodeRef) -> Option<&str> {
        self.nodes.get(node.0 as usize).map(|n| n.path.as_str())
    }

    fn get(&self, node: NodeRef) -> Result<&BNode, BuildError> {
        self.nodes.get(node.0 as usize).ok_or(BuildError::UnknownNode(node.0))
    }

    fn get_mut(&mut self, node: NodeRef) -> Result<&mut BNode, BuildError> {
        self.nodes.get_mut(node.0 as usize).ok_or(BuildError::UnknownNode(node.0))
    }

    /// Adds state `key` as the last child of `parent` (document order = call order).
    pub fn add_state(&mut self, parent: NodeRef, key: &str, kind: NodeKind) -> Result<NodeRef, BuildError> {
        let p = self.get(parent)?;
        let parent_path = p.path.clone();
        match p.kind {
            NodeKind::Final => return Err(BuildError::FinalWithChildren { path: parent_path }),
            NodeKind::History { .. } => return Err(BuildError::HistoryWithChildren { path: parent_path }),
            NodeKind::State | NodeKind::Parallel => {}
        }
        if key.is_empty() || key.contains(['.', '#']) || key.chars().any(char::is_whitespace) {
            return Err(BuildError::InvalidKey { parent: parent_path, key: key.to_owned() });
        }
        let path = if parent_path.is_empty() { key.to_owned() } else { format!("{parent_path}.{key}") };
        if matches!(kind, NodeKind::History { .. }) && parent.0 == 0 {
            return Err(BuildError::HistoryOutsideCompound { path });
        }
        if self.by_path.contains_key(&path) {
            return Err(BuildError::DuplicateState { path });
        }
        if self.nodes.len() >= MAX_STATES {
            return Err(BuildError::TooManyStates { count: self.nodes.len() + 1 });
        }
        let idx = self.nodes.len();
        self.nodes.push(BNode {
            key: key.to_owned(),
            path: path.clone(),
            parent: Some(parent.0 as usize),
            kind,
            children: Vec::new(),
            initial: None,
            history_default: None,
            entry: Vec::new(),
            exit: Vec::new(),
            transitions: Vec::new(),
        });
        self.nodes[parent.0 as usize].children.push(idx);
        self.by_path.insert(path, idx);
        Ok(NodeRef(idx as u32))
    }

    /// Sets the initial transition of a compound state (or the root): one child path, or
    /// several absolute paths (deep and/or multi-region initial), with actions run after the
    /// state's entry actions. Without it, the first non-history child is the initial state.
    pub fn set_initial(
        &mut self,
        node: NodeRef,
        targets: impl IntoIterator<Item = impl Into<String>>,
        actions: Vec<ActionSpec>,
    ) -> Result<(), BuildError> {
        let n = self.get_mut(node)?;
        if n.initial.is_some() {
            return Err(BuildError::DuplicateInitial { path: n.path.clone() });
        }
        n.initial = Some((targets.into_iter().map(Into::into).collect(), actions));
        Ok(())
    }

    /// Sets the default transition of a history state (used when no history is stored).
    /// Without it, the default is the parent's initial state(s) (all regions for a parallel parent).
    pub fn set_history_default(
        &mut self,
        node: NodeRef,
        targets: impl IntoIterator<Item = impl Into<String>>,
        actions: Vec<ActionSpec>,
    ) -> Result<(), BuildError> {
        let n = self.get_mut(node)?;
        if !matches!(n.kind, NodeKind::History { .. }) {
            return Err(BuildError::NotAllowed {
                path: n.path.clone(),
                kind: kind_name(n.kind, !n.children.is_empty()),
                what: "a history default",
            });
        }
        n.history_default = Some((targets.into_iter().map(Into::into).collect(), actions));
        Ok(())
    }

    fn no_history(&self, node: NodeRef, what: &'static str) -> Result<(), BuildError> {
        let n = self.get(node)?;
        if matches!(n.kind, NodeKind::History { .. }) {
            return Err(BuildError::NotAllowed { path: n.path.clone(), kind: "history", what });
        }
        Ok(())
    }

    /// Appends an entry action.
    pub fn add_entry(&mut self, node: NodeRef, action: ActionSpec) -> Result<(), BuildError> {
        self.no_history(node, "an entry action")?;
        self.get_mut(node)?.entry.push(action);
        Ok(())
    }

    /// Appends an exit action.
    pub fn add_exit(&mut self, node: NodeRef, action: ActionSpec) -> Result<(), BuildError> {
        self.no_history(node, "an exit action")?;
        self.get_mut(node)?.exit.push(action);
        Ok(())
    }

    /// Appends a transition to `node` (document order = call order). Descriptors are checked now;
    /// paths when building.
    pub fn add_transition(&mut self, node: NodeRef, spec: TransitionSpec) -> Result<(), BuildError> {
        self.no_history(node, "a transition")?;
        let n = self.get_mut(node)?;
        let descriptors = match &spec.trigger {
            TriggerSpec::Events(list) => {
                if list.is_empty() {
                    return Err(BuildError::NoDescriptor { source_state: n.path.clone() });
                }
                list.iter()
                    .map(|d| EventDescriptor::parse(d))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|error| BuildError::Descriptor { source_state: n.path.clone(), error })?
            }
            TriggerSpec::Done => vec![EventDescriptor::Exact(done_event_name(&n.path).into())],
            TriggerSpec::Always | TriggerSpec::After(_) | TriggerSpec::AfterComputed { .. } => Vec::new(),
        };
        n.transitions.push(BTransition {
            trigger: spec.trigger,
            descriptors,
            targets: spec.targets,
            guard: spec.guard,
            actions: spec.actions,
            reenter: spec.reenter,
        });
        Ok(())
    }

    /// Resolves every path and precomputes the model.
    pub fn build(self) -> Result<Chart, BuildError> {
        Resolver::new(self)?.run()
    }
}

/// Build-time resolution state.
struct Resolver {
    b: ChartBuilder,
    /// Builder index -> StateId.
    id_of: Vec<StateId>,
    /// StateId -> builder index.
    order: Vec<usize>,
    states: Vec<StateNode>,
}

impl Resolver {
    fn new(b: ChartBuilder) -> Result<Self, BuildError> {
        if b.nodes[0].children.iter().all(|c| matches!(b.nodes[*c].kind, NodeKind::History { .. })) {
            return Err(BuildError::EmptyChart);
        }
        // Pre-order numbering.
        let mut order = Vec::with_capacity(b.nodes.len());
        let mut stack = vec![0usize];
        while let Some(n) = stack.pop() {
            order.push(n);
            stack.extend(b.nodes[n].children.iter().rev());
        }
        let mut id_of = vec![StateId::ROOT; b.nodes.len()];
        for (i, n) in order.iter().enumerate() {
            id_of[*n] = StateId::from_index(i);
        }
        Ok(Self { b, id_of, order, states: Vec::new() })
    }

    fn path(&self, id: StateId) -> &str {
        &self.b.nodes[self.order[id.index()]].path
    }

    fn lookup(&self, path: &str) -> Option<StateId> {
        self.b.by_path.get(path).map(|i| self.id_of[*i])
    }

    fn run(mut self) -> Result<Chart, BuildError> {
        // 1. Skeleton: kinds, tree links, subtree ranges, depth.
        let count = self.order.len();
        for i in 0..count {
            let bn = &self.b.nodes[self.order[i]];
            let id = StateId::from_index(i);
            let real_children: Vec<StateId> = bn
                .children
                .iter()
                .filter(|c| !matches!(self.b.nodes[**c].kind, NodeKind::History { .. }))
                .map(|c| self.id_of[*c])
                .collect();
            let history_children: Vec<StateId> = bn
                .children
                .iter()
                .filter(|c| matches!(self.b.nodes[**c].kind, NodeKind::History { .. }))
                .map(|c| self.id_of[*c])
                .collect();
            let kind = match bn.kind {
                NodeKind::State if bn.children.is_empty() => StateKind::Atomic,
                NodeKind::State => StateKind::Compound,
                NodeKind::Parallel => StateKind::Parallel,
                NodeKind::Final => StateKind::Final,
                NodeKind::History { deep } => StateKind::History { deep },
            };
            if matches!(kind, StateKind::Compound | StateKind::Parallel) && real_children.is_empty() {
                return Err(BuildError::MissingInitial { path: bn.path.clone() });
            }
            let parent = bn.parent.map(|p| self.id_of[p]);
            let depth = parent.map_or(0, |p| self.states[p.index()].depth + 1);
            self.states.push(StateNode {
                id,
                key: bn.key.as_str().into(),
                path: bn.path.as_str().into(),
                parent,
                children: real_children.into(),
                history_children: history_children.into(),
                kind,
                depth,
                last_descendant: id,
                initial: None,
                history_default: None,
                history_slot: None,
                entry: Box::default(),
                exit: Box::default(),
                transitions: 0..0,
                after: Box::default(),
                done_event: None,
            });
        }
        for i in (1..count).rev() {
            let last = self.states[i].last_descendant;
            let p = self.states[i].parent.map_or(0, StateId::index);
            if self.states[p].last_descendant < last {
                self.states[p].last_descendant = last;
            }
        }
        // History kinds need a compound/parallel parent (the root is excluded at add time).
        // 2. Initial transitions of compound states.
        for i in 0..count {
            let id = StateId::from_index(i);
            let bn = &self.b.nodes[self.order[i]];
            let kind = self.states[i].kind;
            match (&bn.initial, kind) {
                (Some((targets, actions)), StateKind::Compound) => {
                    let ids = self.resolve_targets(id, targets, "initial")?;
                    for t in &ids {
                        if !self.is_desc(*t, id) {
                            return Err(BuildError::InitialNotDescendant {
                                path: bn.path.clone(),
                                target: self.path(*t).to_owned(),
                            });
                        }
                    }
                    if ids.is_empty() {
                        return Err(BuildError::MissingInitial { path: bn.path.clone() });
                    }
                    self.check_legal_set(id, &ids, "initial")?;
                    let actions = self.resolve_actions(id, actions)?;
                    self.states[i].initial =
                        Some(DefaultTransition { targets: ids.into(), actions: actions.into() });
                }
                (Some(_), _) => {
                    return Err(BuildError::NotAllowed {
                        path: bn.path.clone(),
                        kind: kind_name(bn.kind, !bn.children.is_empty()),
                        what: "an initial state",
                    });
                }
                (None, StateKind::Compound) => {
                    let first = self.states[i].children[0];
                    self.states[i].initial =
                        Some(DefaultTransition { targets: vec![first].into(), actions: Box::default() });
                }
                (None, _) => {}
            }
        }
        // 3. History defaults and slots.
        let mut history_nodes = Vec::new();
        for i in 0..count {
            let id = StateId::from_index(i);
            if !matches!(self.states[i].kind, StateKind::History { .. }) {
                continue;
            }
            let parent = self.states[i].parent.unwrap_or(StateId::ROOT);
            let bn = &self.b.nodes[self.order[i]];
            let default = match &bn.history_default {
                Some((targets, actions)) if !targets.is_empty() => {
                    let ids = self.resolve_targets(id, targets, "history default")?;
                    for t in &ids {
                        if !self.is_desc(*t, parent) || *t == id {
                            return Err(BuildError::HistoryDefaultOutsideParent {
                                path: bn.path.clone(),
                                target: self.path(*t).to_owned(),
                            });
                        }
                    }
                    self.check_legal_set(id, &ids, "history default")?;
                    let actions = self.resolve_actions(id, actions)?;
                    DefaultTransition { targets: ids.into(), actions: actions.into() }
                }
                other => {
                    let targets: Box<[StateId]> = match self.states[parent.index()].kind {
                        StateKind::Parallel => self.states[parent.index()].children.clone(),
                        _ => self.states[parent.index()]
                            .initial
                            .as_ref()
                            .map(|t| t.targets.clone())
                            .unwrap_or_default(),
                    };
                    if targets.is_empty() || targets.contains(&id) {
                        return Err(BuildError::MissingHistoryDefault { path: bn.path.clone() });
                    }
                    let actions = match other {
                        Some((_, actions)) => self.resolve_actions(id, actions)?,
                        None => Vec::new(),
                    };
                    DefaultTransition { targets, actions: actions.into() }
                }
            };
            self.states[i].history_default = Some(default);
            self.states[i].history_slot = Some(
                u16::try_from(history_nodes.len())
                    .map_err(|_| BuildError::TooManyStates { count: history_nodes.len() })?,
            );
            history_nodes.push(id);
        }
        // 4. Entry/exit actions, transitions, after timers, done events.
        let mut transitions: Vec<Transition> = Vec::new();
        for i in 0..count {
            let id = StateId::from_index(i);
            let bi = self.order[i];
            let entry = self.resolve_actions(id, &self.b.nodes[bi].entry.clone())?;
            let exit = self.resolve_actions(id, &self.b.nodes[bi].exit.clone())?;
            let start = transitions.len();
            let mut after: Vec<AfterTimer> = Vec::new();
            let specs = std::mem::take(&mut self.b.nodes[bi].transitions);
            for spec in specs {
                let tid = u32::try_from(transitions.len())
                    .map_err(|_| BuildError::TooManyTransitions { path: self.path(id).to_owned() })?;
                let trigger = match spec.trigger {
                    TriggerSpec::Events(_) | TriggerSpec::Done => Trigger::Events(spec.descriptors.into()),
                    TriggerSpec::Always => Trigger::Eventless,
                    TriggerSpec::After(ms) => {
                        let idx = match after.iter().position(|a| a.computed.is_none() && a.delay_ms == ms) {
                            Some(idx) => idx,
                            None => {
                                let event: Arc<str> = format!("xstate.after.{ms}.{}", self.path(id)).into();
                                after.push(AfterTimer { delay_ms: ms, computed: None, event });
                                after.len() - 1
                            }
                        };
                        Trigger::After(
                            u16::try_from(idx).map_err(|_| BuildError::TooManyTransitions {
                                path: self.path(id).to_owned(),
                            })?,
                        )
                    }
                    TriggerSpec::AfterComputed { id: delay, name } => {
                        if !is_delay_name(&name) {
                            return Err(BuildError::InvalidDelayName {
                                path: self.path(id).to_owned(),
                                name,
                            });
                        }
                        let same = |a: &AfterTimer| a.computed.as_ref().is_some_and(|(_, n)| **n == *name);
                        let idx = match after.iter().position(same) {
                            Some(idx) => idx,
                            None => {
                                let event: Arc<str> = format!("xstate.after.{name}.{}", self.path(id)).into();
                                after.push(AfterTimer {
                                    delay_ms: 0,
                                    computed: Some((delay, name.into())),
                                    event,
                                });
                                after.len() - 1
                            }
                        };
                        Trigger::After(
                            u16::try_from(idx).map_err(|_| BuildError::TooManyTransitions {
                                path: self.path(id).to_owned(),
                            })?,
                        )
                    }
                };
                let targets = self.resolve_targets(id, &spec.targets, "transition")?;
                self.check_legal_set(id, &targets, "transition")?;
                let guard = spec.guard.as_ref().map(|g| self.resolve_guard(id, g)).transpose()?;
                let actions = self.resolve_actions(id, &spec.actions)?;
                let domain = if targets.is_empty() {
                    Domain::None
                } else if targets
                    .iter()
                    .any(|t| matches!(self.states[t.index()].kind, StateKind::History { .. }))
                {
                    Domain::Dynamic
                } else {
                    Domain::Static(self.domain_for(id, spec.reenter, &targets))
                };
                transitions.push(Transition {
                    id: TransitionId(tid),
                    source: id,
                    trigger,
                    guard,
                    actions: actions.into(),
                    targets: targets.into(),
                    reenter: spec.reenter,
                    domain,
                });
            }
            let end = transitions.len();
            let st = &mut self.states[i];
            st.entry = entry.into();
            st.exit = exit.into();
            st.transitions = start as u32..end as u32;
            st.after = after.into();
            if i != 0 && matches!(st.kind, StateKind::Compound | StateKind::Parallel) {
                st.done_event = Some(done_event_name(&st.path).into());
            }
        }
        // 5. Sets, index, fingerprint.
        let mut atomic = StateSet::new(count);
        let mut has_after = StateSet::new(count);
        let mut by_path = IndexMap::with_capacity(count);
        let mut fp = Fnv::new();
        for st in &self.states {
            if st.is_atomic() {
                atomic.insert(st.id);
            }
            if !st.after.is_empty() {
                has_after.insert(st.id);
            }
            by_path.insert(st.path.clone(), st.id);
            fp.write(st.path.as_bytes());
            fp.write(&[
                0xff,
                match st.kind {
                    StateKind::Atomic => 0,
                    StateKind::Compound => 1,
                    StateKind::Parallel => 2,
                    StateKind::Final => 3,
                    StateKind::History { deep: false } => 4,
                    StateKind::History { deep: true } => 5,
                },
            ]);
            for a in &st.after {
                fp.write(&a.delay_ms.to_le_bytes());
                if let Some((delay, name)) = &a.computed {
                    fp.write(&delay.0.to_le_bytes());
                    fp.write(name.as_bytes());
                    fp.write(&[0xfe]);
                }
            }
        }
        Ok(Chart {
            machine_id: self.b.machine_id.into(),
            states: self.states,
            transitions,
            by_path,
            atomic,
            history_nodes: history_nodes.into(),
            has_after,
            fingerprint: fp.finish(),
        })
    }

    fn is_desc(&self, a: StateId, b: StateId) -> bool {
        b < a && a <= self.states[b.index()].last_descendant
    }

    fn resolve_targets(
        &self,
        source: StateId,
        targets: &[String],
        context: &'static str,
    ) -> Result<Vec<StateId>, BuildError> {
        targets
            .iter()
            .map(|t| {
                self.lookup(t).filter(|s| *s != StateId::ROOT).ok_or_else(|| BuildError::UnknownTarget {
                    source_state: self.path(source).to_owned(),
                    context,
                    target: t.clone(),
                })
            })
            .collect()
    }

    /// Targets must be pairwise in different regions of a parallel state.
    fn check_legal_set(
        &self,
        source: StateId,
        ids: &[StateId],
        context: &'static str,
    ) -> Result<(), BuildError> {
        let real: Vec<StateId> = ids
            .iter()
            .copied()
            .filter(|t| !matches!(self.states[t.index()].kind, StateKind::History { .. }))
            .collect();
        for (i, a) in real.iter().enumerate() {
            for b in &real[i + 1..] {
                let legal = a != b && !self.is_desc(*a, *b) && !self.is_desc(*b, *a) && {
                    // Lowest common ancestor must be parallel.
                    let mut anc = self.states[a.index()].parent;
                    while let Some(x) = anc {
                        if self.is_desc(*b, x) {
                            break;
                        }
                        anc = self.states[x.index()].parent;
                    }
                    anc.is_some_and(|x| self.states[x.index()].kind == StateKind::Parallel)
                };
                if !legal {
                    return Err(BuildError::IllegalTargetSet {
                        source_state: self.path(source).to_owned(),
                        context,
                        targets: ids.iter().map(|t| self.path(*t).to_owned()).collect(),
                    });
                }
            }
        }
        Ok(())
    }

    fn domain_for(&self, source: StateId, reenter: bool, targets: &[StateId]) -> StateId {
        // Same rule as `Chart::domain_for`, on the partially built tree.
        if !reenter
            && self.states[source.index()].kind == StateKind::Compound
            && targets.iter().all(|t| self.is_desc(*t, source))
        {
            return source;
        }
        if source == StateId::ROOT {
            return StateId::ROOT;
        }
        let mut anc = self.states[source.index()].parent;
        while let Some(a) = anc {
            let ok_kind = a == StateId::ROOT || self.states[a.index()].kind == StateKind::Compound;
            if ok_kind && targets.iter().all(|t| self.is_desc(*t, a)) {
                return a;
            }
            anc = self.states[a.index()].parent;
        }
        StateId::ROOT
    }

    fn resolve_guard(&self, source: StateId, g: &GuardSpec) -> Result<Guard, BuildError> {
        let find = |p: &str| {
            self.lookup(p).ok_or_else(|| BuildError::UnknownGuardState {
                source_state: self.path(source).to_owned(),
                target: p.to_owned(),
            })
        };
        Ok(match g {
            GuardSpec::Custom(id) => Guard::Custom(*id),
            GuardSpec::In(p) => Guard::In(find(p)?),
            GuardSpec::NotIn(p) => Guard::NotIn(find(p)?),
            GuardSpec::Const(b) => Guard::Const(*b),
        })
    }

    fn resolve_actions(&self, source: StateId, actions: &[ActionSpec]) -> Result<Vec<Action>, BuildError> {
        actions
            .iter()
            .map(|a| {
                Ok(Action {
                    kind: a.kind.clone(),
                    guard: a.guard.as_ref().map(|g| self.resolve_guard(source, g)).transpose()?,
                })
            })
            .collect()
    }
}

/// FNV-1a, 64 bit: stable across platforms and releases (unlike `DefaultHasher`).
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A computed delay's name: an identifier (ASCII letter or `_`, then letters, digits, `_`), so
/// that it never reads as a delay in ms.
fn is_delay_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_states() -> (ChartBuilder, NodeRef, NodeRef) {
        let mut b = ChartBuilder::new("m");
        let root = b.root();
        let a = b.add_state(root, "a", NodeKind::State).unwrap();
        let c = b.add_state(root, "c", NodeKind::State).unwrap();
        (b, a, c)
    }

    #[test]
    fn document_order_is_preorder() {
        let mut b = ChartBuilder::new("m");
        let root = b.root();
        let a = b.add_state(root, "a", NodeKind::State).unwrap();
        let c = b.add_state(root, "c", NodeKind::State).unwrap();
        b.add_state(a, "a1", NodeKind::State).unwrap();
        b.add_state(c, "c1", NodeKind::State).unwrap();
        b.add_state(a, "a2", NodeKind::State).unwrap();
        let chart = b.build().unwrap();
        let paths: Vec<&str> = chart.states().iter().map(|s| s.path()).collect();
        assert_eq!(paths, ["", "a", "a.a1", "a.a2", "c", "c.c1"]);
        let a = chart.lookup("a").unwrap();
        assert_eq!(chart.state(a).last_descendant(), chart.lookup("a.a2").unwrap());
        assert!(chart.is_descendant(chart.lookup("a.a2").unwrap(), a));
        assert!(!chart.is_descendant(chart.lookup("c.c1").unwrap(), a));
        assert_eq!(chart.state(a).depth(), 1);
        assert_eq!(chart.state(a).initial().unwrap().targets(), &[chart.lookup("a.a1").unwrap()]);
    }

    #[test]
    fn unknown_target() {
        let (mut b, a, _) = two_states();
        b.add_transition(a, TransitionSpec::on("t").target("nope")).unwrap();
        assert!(matches!(b.build(), Err(BuildError::UnknownTarget { target, .. }) if target == "nope"));
    }

    #[test]
    fn duplicate_and_bad_keys() {
        let (mut b, _, _) = two_states();
        let root = b.root();
        assert!(matches!(b.add_state(root, "a", NodeKind::State), Err(BuildError::DuplicateState { .. })));
        assert!(matches!(b.add_state(root, "x.y", NodeKind::State), Err(BuildError::InvalidKey { .. })));
        assert!(matches!(b.add_state(root, "", NodeKind::State), Err(BuildError::InvalidKey { .. })));
    }

    #[test]
    fn final_and_history_have_no_children() {
        let (mut b, a, _) = two_states();
        let root = b.root();
        let f = b.add_state(root, "f", NodeKind::Final).unwrap();
        assert!(matches!(b.add_state(f, "x", NodeKind::State), Err(BuildError::FinalWithChildren { .. })));
        b.add_state(a, "a1", NodeKind::State).unwrap();
        let h = b.add_state(a, "h", NodeKind::History { deep: false }).unwrap();
        assert!(matches!(b.add_state(h, "x", NodeKind::State), Err(BuildError::HistoryWithChildren { .. })));
        assert!(matches!(
            b.add_state(root, "h", NodeKind::History { deep: true }),
            Err(BuildError::HistoryOutsideCompound { .. })
        ));
    }

    #[test]
    fn missing_initial_when_only_history_children() {
        let (mut b, a, _) = two_states();
        b.add_state(a, "h", NodeKind::History { deep: false }).unwrap();
        assert!(matches!(b.build(), Err(BuildError::MissingInitial { path }) if path == "a"));
    }

    #[test]
    fn initial_must_be_descendant_and_only_on_compound() {
        let (mut b, a, c) = two_states();
        b.add_state(a, "a1", NodeKind::State).unwrap();
        b.set_initial(a, ["c"], vec![]).unwrap();
        assert!(matches!(b.build(), Err(BuildError::InitialNotDescendant { .. })));
        let (mut b, _, c2) = two_states();
        b.set_initial(c2, ["a"], vec![]).unwrap();
        assert!(matches!(b.build(), Err(BuildError::NotAllowed { what: "an initial state", .. })));
        let _ = c;
    }

    #[test]
    fn illegal_multi_target() {
        let (mut b, a, c) = two_states();
        b.add_transition(a, TransitionSpec::on("t").targets(["a", "c"])).unwrap();
        let _ = c;
        assert!(matches!(b.build(), Err(BuildError::IllegalTargetSet { .. })));
    }

    #[test]
    fn bad_descriptor_and_history_transition() {
        let (mut b, a, _) = two_states();
        assert!(matches!(b.add_transition(a, TransitionSpec::on("a*")), Err(BuildError::Descriptor { .. })));
        b.add_state(a, "a1", NodeKind::State).unwrap();
        let h = b.add_state(a, "h", NodeKind::History { deep: false }).unwrap();
        assert!(matches!(
            b.add_transition(h, TransitionSpec::on("x")),
            Err(BuildError::NotAllowed { kind: "history", .. })
        ));
    }

    #[test]
    fn history_default_outside_parent() {
        let (mut b, a, _) = two_states();
        b.add_state(a, "a1", NodeKind::State).unwrap();
        let h = b.add_state(a, "h", NodeKind::History { deep: false }).unwrap();
        b.set_history_default(h, ["c"], vec![]).unwrap();
        assert!(matches!(b.build(), Err(BuildError::HistoryDefaultOutsideParent { .. })));
    }

    #[test]
    fn unknown_guard_state() {
        let (mut b, a, _) = two_states();
        b.add_transition(a, TransitionSpec::on("t").guard(GuardSpec::In("zz".into()))).unwrap();
        assert!(matches!(b.build(), Err(BuildError::UnknownGuardState { .. })));
    }

    #[test]
    fn static_domains() {
        let mut b = ChartBuilder::new("m");
        let root = b.root();
        let p = b.add_state(root, "p", NodeKind::Parallel).unwrap();
        let r1 = b.add_state(p, "r1", NodeKind::State).unwrap();
        let x = b.add_state(r1, "x", NodeKind::State).unwrap();
        b.add_state(r1, "y", NodeKind::State).unwrap();
        b.add_state(p, "r2", NodeKind::State).unwrap();
        b.add_transition(x, TransitionSpec::on("a").target("p.r1.y")).unwrap();
        b.add_transition(r1, TransitionSpec::on("b").target("p.r1.y")).unwrap();
        b.add_transition(r1, TransitionSpec::on("c").target("p.r1.y").reenter(true)).unwrap();
        b.add_transition(p, TransitionSpec::on("d").target("p.r1.y")).unwrap();
        b.add_transition(r1, TransitionSpec::on("e").target("p.r1").reenter(true)).unwrap();
        let chart = b.build().unwrap();
        let d = |i: usize| chart.transitions()[i].static_domain().map(|s| chart.path(s).to_owned());
        let ts = chart.transitions();
        let idx = |ev: &str| {
            ts.iter()
                .position(|t| matches!(t.trigger(), Trigger::Events(ds) if ds[0].to_string() == ev))
                .unwrap()
        };
        assert_eq!(d(idx("a")).as_deref(), Some("p.r1"));
        assert_eq!(d(idx("b")).as_deref(), Some("p.r1"), "internal: source compound, target inside");
        assert_eq!(d(idx("c")).as_deref(), Some(""), "external: LCCA skips the parallel p");
        assert_eq!(d(idx("d")).as_deref(), Some(""), "internal from a parallel source acts as external");
        assert_eq!(d(idx("e")).as_deref(), Some(""));
    }
}
