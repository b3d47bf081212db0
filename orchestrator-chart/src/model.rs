//! The resolved chart: an immutable, flat model built by [`ChartBuilder`](crate::ChartBuilder).
//!
//! States live in one `Vec` in **document order** (pre-order: a parent before its children,
//! siblings in declaration order) and are named by a compact [`StateId`] that *is* the
//! document-order index. Consequently:
//!
//! * the descendants of `s` are exactly the ids `s+1 ..= s.last_descendant()`, so the
//!   proper-descendant test is two comparisons and "active descendants" is a bit range;
//! * ascending id order is SCXML entry order (parents before children, document order) and
//!   descending id order is SCXML exit order (children before parents, reverse document order).
//!
//! State 0 is the machine root (path `""`, compound or parallel). It is active from start to
//! finish and is never exited.
//!
//! Everything that does not depend on the configuration is precomputed: depth, subtree range,
//! the initial transition, each transition's domain (SCXML `getTransitionDomain`; transitions
//! with a history target are resolved at run time because their effective targets depend on
//! the stored history), `done.state.<path>` and `after` event names.

use std::ops::Range;

use crate::action::{Action, DelayId, EventName, Guard};
use crate::descriptor::EventDescriptor;

/// A state of one chart: its index in document order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateId(pub u16);

impl StateId {
    /// The machine root.
    pub const ROOT: StateId = StateId(0);

    /// The index as `usize`.
    #[inline]
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// # Panics
    /// If `i` does not fit in `u16` (charts are limited to 65 535 states by the builder).
    #[inline]
    pub(crate) fn from_index(i: usize) -> Self {
        Self(u16::try_from(i).expect("state index fits in u16"))
    }
}

/// A transition of one chart: its index in document order (by source state, then declaration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransitionId(pub u32);

impl TransitionId {
    /// The index as `usize`.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The kind of a state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StateKind {
    /// No child states.
    Atomic,
    /// Child states, exactly one of which is active.
    Compound,
    /// Child states (regions), all active together.
    Parallel,
    /// A final state (atomic).
    Final,
    /// A history pseudo-state; never active.
    History {
        /// Deep (active atomic descendants) or shallow (active children).
        deep: bool,
    },
}

/// What a transition reacts to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// Events matching any of these descriptors.
    Events(Box<[EventDescriptor]>),
    /// Eventless (`always`): taken whenever enabled, before internal events.
    Eventless,
    /// The source state's `after` timer with this index in [`StateNode::after`].
    After(u16),
}

/// Where a transition's exits and entries happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Domain {
    /// Targetless: nothing is exited or entered.
    None,
    /// Known at build time.
    Static(StateId),
    /// A target is a history state: computed from the stored history when taken.
    Dynamic,
}

/// A transition (or the transition part of an initial / history default).
#[derive(Debug, Clone)]
pub struct Transition {
    pub(crate) id: TransitionId,
    pub(crate) source: StateId,
    pub(crate) trigger: Trigger,
    pub(crate) guard: Option<Guard>,
    pub(crate) actions: Box<[Action]>,
    pub(crate) targets: Box<[StateId]>,
    pub(crate) reenter: bool,
    pub(crate) domain: Domain,
}

impl Transition {
    /// Its id (document order).
    pub fn id(&self) -> TransitionId {
        self.id
    }
    /// The state declaring it.
    pub fn source(&self) -> StateId {
        self.source
    }
    /// What it reacts to.
    pub fn trigger(&self) -> &Trigger {
        &self.trigger
    }
    /// Its guard.
    pub fn guard(&self) -> Option<&Guard> {
        self.guard.as_ref()
    }
    /// Its actions, in order.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }
    /// Its targets; empty = targetless.
    pub fn targets(&self) -> &[StateId] {
        &self.targets
    }
    /// `true` = SCXML external (the source is exited even when every target is inside it).
    pub fn reenter(&self) -> bool {
        self.reenter
    }
    /// The transition domain when it does not depend on stored history (`None` for targetless
    /// transitions and for transitions targeting a history state).
    pub fn static_domain(&self) -> Option<StateId> {
        match self.domain {
            Domain::Static(d) => Some(d),
            Domain::None | Domain::Dynamic => None,
        }
    }
}

/// The initial transition of a compound state, or the default transition of a history state.
#[derive(Debug, Clone, Default)]
pub struct DefaultTransition {
    pub(crate) targets: Box<[StateId]>,
    pub(crate) actions: Box<[Action]>,
}

impl DefaultTransition {
    /// Target states (several for a deep / multi-region initial).
    pub fn targets(&self) -> &[StateId] {
        &self.targets
    }
    /// Actions, run after the parent's entry actions and before the children are entered.
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }
}

/// One `after` timer of a state.
#[derive(Debug, Clone)]
pub struct AfterTimer {
    pub(crate) delay_ms: u64,
    /// A computed delay: its id and name.
    pub(crate) computed: Option<(DelayId, EventName)>,
    pub(crate) event: EventName,
}

impl AfterTimer {
    /// Delay from the state's entry; 0 for a [computed](Self::computed) delay.
    pub fn delay_ms(&self) -> u64 {
        self.delay_ms
    }
    /// A delay computed by [`Host::delay`](crate::Host::delay) when the state is entered: its id
    /// and its name (shown by the exporters as `after <name>`).
    pub fn computed(&self) -> Option<(DelayId, &str)> {
        self.computed.as_ref().map(|(id, name)| (*id, &**name))
    }
    /// The event name reported to the host: `xstate.after.<ms>.<path>`. Only the owning state's
    /// `after` transitions react to the timer, whatever descriptors other transitions have.
    pub fn event(&self) -> &str {
        &self.event
    }
}

/// A state of the chart.
#[derive(Debug, Clone)]
pub struct StateNode {
    pub(crate) id: StateId,
    pub(crate) key: Box<str>,
    pub(crate) path: Box<str>,
    pub(crate) parent: Option<StateId>,
    pub(crate) children: Box<[StateId]>,
    pub(crate) history_children: Box<[StateId]>,
    pub(crate) kind: StateKind,
    pub(crate) depth: u16,
    pub(crate) last_descendant: StateId,
    pub(crate) initial: Option<DefaultTransition>,
    pub(crate) history_default: Option<DefaultTransition>,
    pub(crate) history_slot: Option<u16>,
    pub(crate) entry: Box<[Action]>,
    pub(crate) exit: Box<[Action]>,
    pub(crate) transitions: Range<u32>,
    pub(crate) after: Box<[AfterTimer]>,
    pub(crate) done_event: Option<EventName>,
}

impl StateNode {
    /// Its id (document-order index).
    pub fn id(&self) -> StateId {
        self.id
    }
    /// Its key inside its parent (`""` for the root).
    pub fn key(&self) -> &str {
        &self.key
    }
    /// Absolute dot path from the root, without the machine id (`p.a.a1`; `""` for the root).
    pub fn path(&self) -> &str {
        &self.path
    }
    /// The parent (`None` for the root).
    pub fn parent(&self) -> Option<StateId> {
        self.parent
    }
    /// Child states in document order, history states excluded.
    pub fn children(&self) -> &[StateId] {
        &self.children
    }
    /// History pseudo-states declared in this state.
    pub fn history_children(&self) -> &[StateId] {
        &self.history_children
    }
    /// The kind.
    pub fn kind(&self) -> StateKind {
        self.kind
    }
    /// Depth (root = 0).
    pub fn depth(&self) -> u16 {
        self.depth
    }
    /// The last state of this state's subtree (itself for leaves).
    pub fn last_descendant(&self) -> StateId {
        self.last_descendant
    }
    /// Whether it is atomic or final (what `expect` lists).
    pub fn is_atomic(&self) -> bool {
        matches!(self.kind, StateKind::Atomic | StateKind::Final)
    }
    /// The initial transition (compound states, and a compound root).
    pub fn initial(&self) -> Option<&DefaultTransition> {
        self.initial.as_ref()
    }
    /// The default transition of a history state.
    pub fn history_default(&self) -> Option<&DefaultTransition> {
        self.history_default.as_ref()
    }
    /// Entry actions, in order.
    pub fn entry(&self) -> &[Action] {
        &self.entry
    }
    /// Exit actions, in order.
    pub fn exit(&self) -> &[Action] {
        &self.exit
    }
    /// `after` timers (one per distinct delay), started on entry and cancelled on exit.
    pub fn after(&self) -> &[AfterTimer] {
        &self.after
    }
    /// `done.state.<path>` for compound and parallel states.
    pub fn done_event(&self) -> Option<&str> {
        self.done_event.as_deref()
    }
}

/// A resolved, immutable statechart. Share it (`Arc<Chart>`, `&'static Chart`) between any
/// number of [`Interpreter`](crate::Interpreter)s.
#[derive(Debug, Clone)]
pub struct Chart {
    pub(crate) machine_id: Box<str>,
    pub(crate) states: Vec<StateNode>,
    pub(crate) transitions: Vec<Transition>,
    pub(crate) by_path: indexmap::IndexMap<Box<str>, StateId>,
    pub(crate) atomic: crate::StateSet,
    pub(crate) history_nodes: Box<[StateId]>,
    pub(crate) has_after: crate::StateSet,
    pub(crate) fingerprint: u64,
}

impl Chart {
    /// The machine id (not part of any path).
    pub fn machine_id(&self) -> &str {
        &self.machine_id
    }
    /// Number of states, root included.
    pub fn len(&self) -> usize {
        self.states.len()
    }
    /// Always false: a chart has at least the root and one child.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }
    /// All states in document order.
    pub fn states(&self) -> &[StateNode] {
        &self.states
    }
    /// One state.
    #[inline]
    pub fn state(&self, id: StateId) -> &StateNode {
        &self.states[id.index()]
    }
    /// All transitions in document order.
    pub fn transitions(&self) -> &[Transition] {
        &self.transitions
    }
    /// One transition.
    #[inline]
    pub fn transition(&self, id: TransitionId) -> &Transition {
        &self.transitions[id.index()]
    }
    /// The transitions declared by a state, in document order.
    #[inline]
    pub fn transitions_of(&self, id: StateId) -> &[Transition] {
        let r = &self.states[id.index()].transitions;
        &self.transitions[r.start as usize..r.end as usize]
    }
    /// The state at an absolute path (`""` = root).
    pub fn lookup(&self, path: &str) -> Option<StateId> {
        self.by_path.get(path).copied()
    }
    /// The absolute path of a state.
    pub fn path(&self, id: StateId) -> &str {
        &self.states[id.index()].path
    }
    /// History states in document order; a history state's position here is its slot in
    /// [`MachineState`](crate::MachineState).
    pub fn history_nodes(&self) -> &[StateId] {
        &self.history_nodes
    }
    /// Atomic and final states, as a set.
    pub fn atomic_states(&self) -> &crate::StateSet {
        &self.atomic
    }
    /// A stable 64-bit digest of the state tree (paths, kinds, `after` delays), stored in
    /// serialized [`MachineState`](crate::MachineState)s to refuse restoring into another chart.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Whether `a` is a proper descendant of `b`.
    #[inline]
    pub fn is_descendant(&self, a: StateId, b: StateId) -> bool {
        b < a && a <= self.states[b.index()].last_descendant
    }

    /// Whether `a` is `b` or a descendant of `b`.
    #[inline]
    pub fn is_descendant_or_self(&self, a: StateId, b: StateId) -> bool {
        b <= a && a <= self.states[b.index()].last_descendant
    }

    /// Proper ancestors of `s`, nearest first, root last.
    pub fn proper_ancestors(&self, s: StateId) -> impl Iterator<Item = StateId> + '_ {
        std::iter::successors(self.states[s.index()].parent, |p| self.states[p.index()].parent)
    }

    /// SCXML `findLCCA`: the nearest proper ancestor of `head` that is compound (or the root) and
    /// contains every state of `rest`. The root when there is none (the root is never exited).
    pub(crate) fn lcca(&self, head: StateId, rest: impl Iterator<Item = StateId> + Clone) -> StateId {
        for anc in self.proper_ancestors(head) {
            let st = &self.states[anc.index()];
            if anc != StateId::ROOT && st.kind != StateKind::Compound {
                continue;
            }
            if rest.clone().all(|s| self.is_descendant(s, anc)) {
                return anc;
            }
        }
        StateId::ROOT
    }

    /// SCXML `getTransitionDomain` for a transition from `source` to the effective targets.
    pub(crate) fn domain_for(
        &self,
        source: StateId,
        reenter: bool,
        targets: impl Iterator<Item = StateId> + Clone,
    ) -> StateId {
        if !reenter
            && self.states[source.index()].kind == StateKind::Compound
            && targets.clone().all(|t| self.is_descendant(t, source))
        {
            return source;
        }
        if source == StateId::ROOT {
            // The root is never exited; its transitions act inside it.
            return StateId::ROOT;
        }
        self.lcca(source, targets)
    }

    /// Whether `set` is a legal configuration: the root is in it, every active state's parent
    /// is active, an active compound state has exactly one active child, an active parallel
    /// state has all its children active, and no history state is active.
    pub fn is_legal_configuration(&self, set: &crate::StateSet) -> bool {
        if set.capacity() != self.len() || !set.contains(StateId::ROOT) {
            return false;
        }
        for s in set.iter() {
            let st = self.state(s);
            if let Some(p) = st.parent
                && !set.contains(p)
            {
                return false;
            }
            match st.kind {
                StateKind::History { .. } => return false,
                StateKind::Compound => {
                    if st.children.iter().filter(|c| set.contains(**c)).count() != 1 {
                        return false;
                    }
                }
                StateKind::Parallel => {
                    if !st.children.iter().all(|c| set.contains(*c)) {
                        return false;
                    }
                }
                StateKind::Atomic | StateKind::Final => {}
            }
        }
        true
    }
}
