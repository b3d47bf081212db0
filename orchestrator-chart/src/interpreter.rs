//! [`Interpreter`]: the SCXML 1.0 Appendix D algorithm over a [`Chart`].
//!
//! The procedures keep the names of the specification's pseudo-code (`selectTransitions`,
//! `removeConflictingTransitions`, `microstep`, `computeExitSet`, `computeEntrySet`,
//! `addDescendantStatesToEnter`, `addAncestorStatesToEnter`, `enterStates`, `exitStates`)
//! so the two can be read side by side. Sets are [`StateSet`] bitsets and every buffer lives in
//! the interpreter's scratch space, so taking an ordinary transition allocates nothing.

use std::collections::VecDeque;
use std::mem;
use std::ops::Deref;
use std::sync::Arc;

use thiserror::Error;

use crate::action::{Action, ActionKind, EventName, Guard};
use crate::bitset::StateSet;
use crate::config::{MachineState, PendingTimer, StateCodecError, TimerKind};
use crate::host::{EventKind, EventRef, Host, INIT_EVENT};
use crate::model::{Chart, Domain, StateId, StateKind, Transition, TransitionId, Trigger};

/// Default for [`Interpreter::set_step_limit`].
pub const DEFAULT_STEP_LIMIT: u32 = 100_000;

/// Why a call could not run to completion.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RunError {
    /// `send` or `advance` before `start`.
    #[error("the machine has not been started")]
    NotStarted,
    /// `start` twice.
    #[error("the machine has already been started")]
    AlreadyStarted,
    /// More microsteps than the limit in one call: an eventless cycle, an event that keeps
    /// re-sending itself, or `after` timers of 0 ms re-entering their state. The machine stopped
    /// between two microsteps (its configuration is legal) and can be inspected.
    #[error("more than {limit} microsteps in one call (eventless or self-sending cycle?)")]
    StepLimit {
        /// The limit.
        limit: u32,
    },
}

/// An event waiting in a queue.
#[derive(Debug, Clone)]
enum Queued {
    Named(EventName, EventKind),
    After { state: StateId, index: u16 },
}

/// The event currently being processed (SCXML `_event`).
enum Current<'e> {
    Init,
    Borrowed(EventRef<'e>),
    Queued(Queued),
}

#[derive(Clone, Copy)]
enum Matcher<'a> {
    Eventless,
    Name(&'a str),
    After(StateId, u16),
}

impl Current<'_> {
    fn event_ref<'s>(&'s self, chart: &'s Chart) -> EventRef<'s> {
        match self {
            Current::Init => EventRef { name: INIT_EVENT, data: None, kind: EventKind::Init },
            Current::Borrowed(e) => *e,
            Current::Queued(Queued::Named(name, kind)) => EventRef { name, data: None, kind: *kind },
            Current::Queued(Queued::After { state, index }) => EventRef {
                name: &chart.state(*state).after[usize::from(*index)].event,
                data: None,
                kind: EventKind::Timer,
            },
        }
    }

    fn matcher(&self) -> Matcher<'_> {
        match self {
            Current::Init => Matcher::Eventless,
            Current::Borrowed(e) => Matcher::Name(e.name),
            Current::Queued(Queued::Named(name, _)) => Matcher::Name(name),
            Current::Queued(Queued::After { state, index }) => Matcher::After(*state, *index),
        }
    }
}

/// Reused buffers.
struct Scratch {
    internal: VecDeque<Queued>,
    external: VecDeque<Queued>,
    enabled: Vec<TransitionId>,
    /// Enabled transitions after conflict removal, with their domains.
    filtered: Vec<(TransitionId, Option<StateId>)>,
    to_remove: Vec<usize>,
    effective: Vec<StateId>,
    exit_set: StateSet,
    to_enter: StateSet,
    default_entry: StateSet,
    default_history: StateSet,
    completed: StateSet,
    /// Per-state memo of one selection pass: `visit_gen[s] == gen` means `s` was searched and
    /// `visit_result[s]` is its first enabled transition.
    visit_gen: Vec<u32>,
    visit_result: Vec<Option<TransitionId>>,
    generation: u32,
}

impl Scratch {
    fn new(chart: &Chart) -> Self {
        let n = chart.len();
        Self {
            internal: VecDeque::with_capacity(8),
            external: VecDeque::with_capacity(8),
            enabled: Vec::with_capacity(8),
            filtered: Vec::with_capacity(8),
            to_remove: Vec::with_capacity(4),
            effective: Vec::with_capacity(8),
            exit_set: StateSet::new(n),
            to_enter: StateSet::new(n),
            default_entry: StateSet::new(n),
            default_history: StateSet::new(n),
            completed: StateSet::new(n),
            visit_gen: vec![0; n],
            visit_result: vec![None; n],
            generation: 0,
        }
    }
}

struct Core<H: Host> {
    host: H,
    context: H::Context,
    state: MachineState,
    s: Scratch,
    step_limit: u32,
    steps: u32,
}

/// A running machine: a chart, the host and its context, and the [`MachineState`].
///
/// Time is owned by the caller: nothing happens between calls, and [`Interpreter::advance`]
/// moves the clock, delivering due timers.
///
/// ```
/// use orchestrator_chart::{ChartBuilder, Interpreter, NodeKind, NoHost, TransitionSpec};
///
/// let mut b = ChartBuilder::new("m");
/// let root = b.root();
/// let a = b.add_state(root, "a", NodeKind::State).unwrap();
/// b.add_state(root, "b", NodeKind::State).unwrap();
/// b.add_transition(a, TransitionSpec::after(10).target("b")).unwrap();
/// let mut m = Interpreter::new(std::sync::Arc::new(b.build().unwrap()), NoHost, ());
/// m.start().unwrap();
/// assert_eq!(m.active_atomic_paths(), ["a"]);
/// assert_eq!(m.next_due(), Some(10));
/// m.advance(10).unwrap();
/// assert_eq!(m.active_atomic_paths(), ["b"]);
/// ```
pub struct Interpreter<H: Host, C: Deref<Target = Chart> = Arc<Chart>> {
    chart: C,
    core: Core<H>,
}

impl<H: Host, C: Deref<Target = Chart>> std::fmt::Debug for Interpreter<H, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interpreter")
            .field("machine", &self.chart.machine_id())
            .field("active", &self.active_atomic_paths())
            .field("state", &self.core.state)
            .finish_non_exhaustive()
    }
}

impl<H: Host, C: Deref<Target = Chart>> Interpreter<H, C> {
    /// A machine that has not started yet.
    pub fn new(chart: C, host: H, context: H::Context) -> Self {
        let state = MachineState::new(&chart);
        let s = Scratch::new(&chart);
        Self { chart, core: Core { host, context, state, s, step_limit: DEFAULT_STEP_LIMIT, steps: 0 } }
    }

    /// A machine resumed from a saved [`MachineState`] (checked against the chart first).
    pub fn restore(
        chart: C,
        host: H,
        context: H::Context,
        state: MachineState,
    ) -> Result<Self, StateCodecError> {
        state.validate(&chart)?;
        let mut m = Self::new(chart, host, context);
        m.core.state = state;
        Ok(m)
    }

    /// Sets the most microsteps one call may take (default [`DEFAULT_STEP_LIMIT`]).
    pub fn set_step_limit(&mut self, limit: u32) {
        self.core.step_limit = limit;
    }

    /// Enters the initial configuration and runs the first macrostep (and any events it sent).
    pub fn start(&mut self) -> Result<(), RunError> {
        if self.core.state.started {
            return Err(RunError::AlreadyStarted);
        }
        let chart: &Chart = &self.chart;
        let core = &mut self.core;
        core.steps = 0;
        core.state.started = true;
        core.s.to_enter.clear();
        core.s.default_entry.clear();
        core.s.default_history.clear();
        {
            let Core { state, s, .. } = &mut *core;
            EntryCalc {
                chart,
                history: &state.history,
                domain: StateId::ROOT,
                to_enter: &mut s.to_enter,
                default_entry: &mut s.default_entry,
                default_history: &mut s.default_history,
            }
            .add_descendants(StateId::ROOT);
        }
        let mut current = Current::Init;
        core.enter_states(chart, &current.event_ref(chart));
        core.macrostep(chart, &mut current)?;
        core.drain_external(chart)
    }

    /// Sends an external event (no payload) and runs to completion.
    pub fn send(&mut self, name: &str) -> Result<(), RunError> {
        self.send_event(EventRef::new(name))
    }

    /// Sends an external event and runs to completion: its microstep, the macrostep, then every
    /// event the chart sent itself, one at a time. Ignored once the machine is done.
    pub fn send_event(&mut self, event: EventRef<'_>) -> Result<(), RunError> {
        let chart: &Chart = &self.chart;
        let core = &mut self.core;
        if !core.state.started {
            return Err(RunError::NotStarted);
        }
        core.steps = 0;
        let mut current = Current::Borrowed(event);
        core.handle_external(chart, &mut current)?;
        core.drain_external(chart)
    }

    /// Moves the clock `ms` forward, delivering every timer due by then in `(due, seq)` order,
    /// each as an external event with its full macrostep (and the events it sends) before the
    /// next. While a timer is processed, the clock reads its due time.
    pub fn advance(&mut self, ms: u64) -> Result<(), RunError> {
        let chart: &Chart = &self.chart;
        let core = &mut self.core;
        if !core.state.started {
            return Err(RunError::NotStarted);
        }
        core.steps = 0;
        let target = core.state.now_ms.saturating_add(ms);
        while !core.state.done {
            match core.state.timers.first() {
                Some(t) if t.due_ms <= target => {}
                _ => break,
            }
            let timer = core.state.timers.remove(0);
            core.state.now_ms = core.state.now_ms.max(timer.due_ms);
            let queued = match timer.kind {
                TimerKind::After { state, index } => Queued::After { state, index },
                TimerKind::Send { event, .. } => Queued::Named(event, EventKind::Timer),
            };
            let mut current = Current::Queued(queued);
            core.handle_external(chart, &mut current)?;
            core.drain_external(chart)?;
        }
        core.state.now_ms = core.state.now_ms.max(target);
        Ok(())
    }

    /// Moves the clock `ms` forward **at once**, then delivers every timer due by then in
    /// `(due, seq)` order, each with its full macrostep. Unlike [`advance`](Self::advance), a late
    /// timer sees the new time, so the timers its transition starts count from now: this is how
    /// a runtime catches up after a pause (a workflow whose 5 s wait ended an hour ago, while
    /// the process was down, starts its next 2 s timeout now, not an hour ago).
    pub fn catch_up(&mut self, ms: u64) -> Result<(), RunError> {
        let chart: &Chart = &self.chart;
        let core = &mut self.core;
        if !core.state.started {
            return Err(RunError::NotStarted);
        }
        core.steps = 0;
        let target = core.state.now_ms.saturating_add(ms);
        core.state.now_ms = target;
        while !core.state.done {
            match core.state.timers.first() {
                Some(t) if t.due_ms <= target => {}
                _ => break,
            }
            let timer = core.state.timers.remove(0);
            let queued = match timer.kind {
                TimerKind::After { state, index } => Queued::After { state, index },
                TimerKind::Send { event, .. } => Queued::Named(event, EventKind::Timer),
            };
            let mut current = Current::Queued(queued);
            core.handle_external(chart, &mut current)?;
            core.drain_external(chart)?;
        }
        Ok(())
    }

    /// The chart.
    pub fn chart(&self) -> &Chart {
        &self.chart
    }
    /// The persistent state.
    pub fn state(&self) -> &MachineState {
        &self.core.state
    }
    /// A copy of the persistent state, to save.
    pub fn snapshot(&self) -> MachineState {
        self.core.state.clone()
    }
    /// The context.
    pub fn context(&self) -> &H::Context {
        &self.core.context
    }
    /// The context, mutably (between calls).
    pub fn context_mut(&mut self) -> &mut H::Context {
        &mut self.core.context
    }
    /// The host.
    pub fn host(&self) -> &H {
        &self.core.host
    }
    /// The host, mutably.
    pub fn host_mut(&mut self) -> &mut H {
        &mut self.core.host
    }
    /// Host, context and state, e.g. to persist them.
    pub fn into_parts(self) -> (H, H::Context, MachineState) {
        (self.core.host, self.core.context, self.core.state)
    }
    /// Whether the machine has started.
    pub fn is_started(&self) -> bool {
        self.core.state.started
    }
    /// Whether a top-level final state was reached.
    pub fn is_done(&self) -> bool {
        self.core.state.done
    }
    /// The clock.
    pub fn now_ms(&self) -> u64 {
        self.core.state.now_ms
    }
    /// When the next timer is due.
    pub fn next_due(&self) -> Option<u64> {
        self.core.state.next_due()
    }
    /// Pending timers in delivery order.
    pub fn pending_timers(&self) -> &[PendingTimer] {
        self.core.state.pending_timers()
    }
    /// Whether a state is active.
    pub fn is_active(&self, state: StateId) -> bool {
        self.core.state.is_active(state)
    }
    /// Whether the state at `path` is active (false for unknown paths).
    pub fn is_in(&self, path: &str) -> bool {
        self.chart.lookup(path).is_some_and(|s| self.core.state.is_active(s))
    }
    /// Paths of the active atomic states in document order.
    pub fn active_atomic_paths(&self) -> Vec<&str> {
        self.core.state.active_atomic_paths(&self.chart)
    }
}

fn eval_guard<H: Host>(
    host: &mut H,
    context: &H::Context,
    active: &StateSet,
    guard: &Guard,
    ev: &EventRef<'_>,
) -> bool {
    match guard {
        Guard::Custom(id) => host.guard(*id, context, ev),
        Guard::In(s) => active.contains(*s),
        Guard::NotIn(s) => !active.contains(*s),
        Guard::Const(b) => *b,
    }
}

#[inline]
fn trigger_matches(t: &Transition, m: Matcher<'_>) -> bool {
    match (m, &t.trigger) {
        (Matcher::Eventless, Trigger::Eventless) => true,
        (Matcher::Name(name), Trigger::Events(ds)) => ds.iter().any(|d| d.matches(name)),
        (Matcher::After(state, index), Trigger::After(i)) => t.source == state && *i == index,
        _ => false,
    }
}

/// SCXML `getEffectiveTargetStates`, appended to `out`.
fn effective_targets(
    chart: &Chart,
    history: &[Option<StateSet>],
    targets: &[StateId],
    out: &mut Vec<StateId>,
) {
    for &t in targets {
        let st = chart.state(t);
        if let Some(slot) = st.history_slot {
            match &history[usize::from(slot)] {
                Some(value) => out.extend(value.iter()),
                None => {
                    if let Some(d) = &st.history_default {
                        effective_targets(chart, history, &d.targets, out);
                    }
                }
            }
        } else {
            out.push(t);
        }
    }
}

/// SCXML `getTransitionDomain` (`None` for targetless transitions).
fn transition_domain(
    chart: &Chart,
    history: &[Option<StateSet>],
    t: &Transition,
    scratch: &mut Vec<StateId>,
) -> Option<StateId> {
    match t.domain {
        Domain::None => None,
        Domain::Static(d) => Some(d),
        Domain::Dynamic => {
            scratch.clear();
            effective_targets(chart, history, &t.targets, scratch);
            Some(chart.domain_for(t.source, t.reenter, scratch.iter().copied()))
        }
    }
}

/// SCXML `isInFinalState` (a final state counts as done, as in XState, for a final region).
fn in_final_state(chart: &Chart, active: &StateSet, s: StateId) -> bool {
    let st = chart.state(s);
    match st.kind {
        StateKind::Compound => {
            st.children.iter().any(|c| chart.state(*c).kind == StateKind::Final && active.contains(*c))
        }
        StateKind::Parallel => st.children.iter().all(|c| in_final_state(chart, active, *c)),
        StateKind::Final => true,
        StateKind::Atomic | StateKind::History { .. } => false,
    }
}

/// `computeEntrySet` helpers: `addDescendantStatesToEnter` and `addAncestorStatesToEnter`.
struct EntryCalc<'a> {
    chart: &'a Chart,
    history: &'a [Option<StateSet>],
    /// The domain of the transition whose entry set is computed (the root at start-up). Nothing
    /// at or above it is entered: see [`EntryCalc::history_stop`].
    domain: StateId,
    to_enter: &'a mut StateSet,
    default_entry: &'a mut StateSet,
    default_history: &'a mut StateSet,
}

impl EntryCalc<'_> {
    fn add_descendants(&mut self, s: StateId) {
        let chart = self.chart;
        let st = chart.state(s);
        if let Some(slot) = st.history_slot {
            let stop = self.history_stop(st.parent.unwrap_or(StateId::ROOT));
            match &self.history[usize::from(slot)] {
                Some(value) => {
                    for x in value.iter() {
                        self.add_descendants(x);
                    }
                    for x in value.iter() {
                        self.add_ancestors(x, stop);
                    }
                }
                None => {
                    self.default_history.insert(s);
                    if let Some(d) = &st.history_default {
                        for &x in d.targets.iter() {
                            self.add_descendants(x);
                        }
                        for &x in d.targets.iter() {
                            self.add_ancestors(x, stop);
                        }
                    }
                }
            }
            return;
        }
        self.to_enter.insert(s);
        match st.kind {
            StateKind::Compound => {
                self.default_entry.insert(s);
                if let Some(init) = &st.initial {
                    for &x in init.targets.iter() {
                        self.add_descendants(x);
                    }
                    for &x in init.targets.iter() {
                        self.add_ancestors(x, s);
                    }
                }
            }
            StateKind::Parallel => self.add_regions(s),
            StateKind::Atomic | StateKind::Final | StateKind::History { .. } => {}
        }
    }

    /// Where `addAncestorStatesToEnter` stops for the stored (or default) states of a history
    /// state whose parent is `parent`: the parent, as in the pseudo-code, unless the transition
    /// domain lies strictly inside it. That happens when the transition comes from inside the
    /// parent and its effective targets share a deeper compound ancestor with the source
    /// (`getTransitionDomain` uses the effective targets); the states from the domain up to the
    /// parent are active and are not exited, so they must not be entered again (the pseudo-code
    /// would run their entry actions twice and, for a parallel one, default-enter its other
    /// regions next to their active children: an illegal configuration). The transition then
    /// acts exactly as one to its effective targets. Only a history state targeted by the
    /// transition itself can have its parent above the domain: any other is reached through a
    /// state being entered, hence strictly inside the domain.
    fn history_stop(&self, parent: StateId) -> StateId {
        if self.chart.is_descendant(self.domain, parent) { self.domain } else { parent }
    }

    /// Enters every region of parallel `p` that has no descendant entered yet.
    fn add_regions(&mut self, p: StateId) {
        let chart = self.chart;
        for &child in chart.state(p).children.iter() {
            let last = chart.state(child).last_descendant.index();
            if !self.to_enter.any_in_range(child.index() + 1, last) {
                self.add_descendants(child);
            }
        }
    }

    fn add_ancestors(&mut self, s: StateId, ancestor: StateId) {
        let chart = self.chart;
        let mut cur = chart.state(s).parent;
        while let Some(a) = cur {
            if a == ancestor || a == StateId::ROOT {
                break;
            }
            self.to_enter.insert(a);
            if chart.state(a).kind == StateKind::Parallel {
                self.add_regions(a);
            }
            cur = chart.state(a).parent;
        }
    }

    /// `addAncestorStatesToEnter` for each effective target of `s`.
    fn add_ancestors_effective(&mut self, s: StateId, ancestor: StateId) {
        let chart = self.chart;
        let st = chart.state(s);
        match st.history_slot {
            Some(slot) => match &self.history[usize::from(slot)] {
                Some(value) => {
                    for x in value.iter() {
                        self.add_ancestors(x, ancestor);
                    }
                }
                None => {
                    if let Some(d) = &st.history_default {
                        for &x in d.targets.iter() {
                            self.add_ancestors_effective(x, ancestor);
                        }
                    }
                }
            },
            None => self.add_ancestors(s, ancestor),
        }
    }
}

impl<H: Host> Core<H> {
    fn exec_all(&mut self, chart: &Chart, actions: &[Action], ev: &EventRef<'_>) {
        for a in actions {
            self.exec(chart, a, ev);
        }
    }

    fn exec(&mut self, _chart: &Chart, action: &Action, ev: &EventRef<'_>) {
        if let Some(g) = &action.guard
            && !eval_guard(&mut self.host, &self.context, &self.state.active, g, ev)
        {
            return;
        }
        match &action.kind {
            ActionKind::Raise(event) => {
                self.s.internal.push_back(Queued::Named(event.clone(), EventKind::Internal))
            }
            ActionKind::Send { event, delay_ms, id } => match delay_ms {
                None | Some(0) => {
                    self.s.external.push_back(Queued::Named(event.clone(), EventKind::External))
                }
                Some(d) => {
                    let due = self.state.now_ms.saturating_add(*d);
                    self.state.schedule(due, TimerKind::Send { event: event.clone(), id: id.clone() });
                }
            },
            ActionKind::Cancel(id) => {
                self.state
                    .timers
                    .retain(|t| !matches!(&t.kind, TimerKind::Send { id: Some(x), .. } if x == id));
            }
            ActionKind::Custom(id) => self.host.action(*id, &mut self.context, ev),
        }
    }

    fn count_step(&mut self) -> Result<(), RunError> {
        self.steps += 1;
        if self.steps > self.step_limit {
            return Err(RunError::StepLimit { limit: self.step_limit });
        }
        Ok(())
    }

    /// `selectTransitions` / `selectEventlessTransitions` into `s.enabled` (document order of
    /// the active atomic states, first enabled transition of the state or its nearest ancestor,
    /// duplicates merged).
    fn select(&mut self, chart: &Chart, m: Matcher<'_>, ev: &EventRef<'_>) {
        let Core { host, context, state, s, .. } = self;
        s.enabled.clear();
        s.generation = s.generation.wrapping_add(1);
        if s.generation == 0 {
            s.visit_gen.fill(0);
            s.generation = 1;
        }
        let generation = s.generation;
        for atomic in state.active.iter() {
            if !chart.atomic.contains(atomic) {
                continue;
            }
            let mut cur = Some(atomic);
            while let Some(st) = cur {
                let i = st.index();
                if s.visit_gen[i] == generation {
                    if s.visit_result[i].is_some() {
                        break; // already selected from another atomic state: merged
                    }
                    cur = chart.state(st).parent;
                    continue;
                }
                s.visit_gen[i] = generation;
                let mut found = None;
                for t in chart.transitions_of(st) {
                    if trigger_matches(t, m)
                        && t.guard.as_ref().is_none_or(|g| eval_guard(host, context, &state.active, g, ev))
                    {
                        found = Some(t.id);
                        break;
                    }
                }
                s.visit_result[i] = found;
                if let Some(t) = found {
                    s.enabled.push(t);
                    break;
                }
                cur = chart.state(st).parent;
            }
        }
    }

    /// `removeConflictingTransitions` from `s.enabled` into `s.filtered`. Two transitions with
    /// targets conflict iff their exit sets intersect, i.e. iff one domain is the other or an
    /// ancestor of it (every enabled transition's exit set is non-empty).
    fn remove_conflicts(&mut self, chart: &Chart) {
        let Core { state, s, .. } = self;
        s.filtered.clear();
        for i in 0..s.enabled.len() {
            let t1 = chart.transition(s.enabled[i]);
            let d1 = transition_domain(chart, &state.history, t1, &mut s.effective);
            let mut preempted = false;
            s.to_remove.clear();
            if let Some(d1) = d1 {
                for (j, (t2, d2)) in s.filtered.iter().enumerate() {
                    let Some(d2) = *d2 else { continue };
                    if chart.is_descendant_or_self(d1, d2) || chart.is_descendant_or_self(d2, d1) {
                        if chart.is_descendant(t1.source, chart.transition(*t2).source) {
                            s.to_remove.push(j);
                        } else {
                            preempted = true;
                            break;
                        }
                    }
                }
            }
            if !preempted {
                for j in s.to_remove.iter().rev() {
                    s.filtered.remove(*j);
                }
                s.filtered.push((t1.id, d1));
            }
        }
    }

    /// `microstep`: exit states, run transition actions, enter states.
    fn microstep(&mut self, chart: &Chart, ev: &EventRef<'_>) {
        // computeExitSet + history recording (before any exit action runs).
        {
            let Core { state, s, .. } = self;
            s.exit_set.clear();
            for (_, d) in &s.filtered {
                if let Some(d) = d {
                    s.exit_set.union_range(
                        &state.active,
                        d.index() + 1,
                        chart.state(*d).last_descendant.index(),
                    );
                }
            }
            for x in s.exit_set.iter() {
                for &h in chart.state(x).history_children.iter() {
                    let hs = chart.state(h);
                    let Some(slot) = hs.history_slot else { continue };
                    let value =
                        state.history[usize::from(slot)].get_or_insert_with(|| StateSet::new(chart.len()));
                    if matches!(hs.kind, StateKind::History { deep: true }) {
                        value.assign_masked_range(
                            &state.active,
                            &chart.atomic,
                            x.index() + 1,
                            chart.state(x).last_descendant.index(),
                        );
                    } else {
                        value.clear();
                        for &c in chart.state(x).children.iter() {
                            if state.active.contains(c) {
                                value.insert(c);
                            }
                        }
                    }
                }
            }
        }
        // exitStates: reverse document order.
        let exit = mem::take(&mut self.s.exit_set);
        for x in exit.iter_rev() {
            self.exec_all(chart, &chart.state(x).exit, ev);
            self.state.active.remove(x);
            if chart.has_after.contains(x) {
                self.state.timers.retain(|t| !matches!(t.kind, TimerKind::After { state, .. } if state == x));
            }
        }
        self.s.exit_set = exit;
        // executeTransitionContent.
        let filtered = mem::take(&mut self.s.filtered);
        for (t, _) in &filtered {
            self.exec_all(chart, &chart.transition(*t).actions, ev);
        }
        // computeEntrySet.
        {
            let Core { state, s, .. } = self;
            s.to_enter.clear();
            s.default_entry.clear();
            s.default_history.clear();
            let mut calc = EntryCalc {
                chart,
                history: &state.history,
                domain: StateId::ROOT,
                to_enter: &mut s.to_enter,
                default_entry: &mut s.default_entry,
                default_history: &mut s.default_history,
            };
            for (t, d) in &filtered {
                let t = chart.transition(*t);
                let Some(d) = *d else { continue };
                calc.domain = d;
                for &x in t.targets.iter() {
                    calc.add_descendants(x);
                }
                for &x in t.targets.iter() {
                    calc.add_ancestors_effective(x, d);
                }
            }
        }
        self.s.filtered = filtered;
        self.enter_states(chart, ev);
    }

    /// `enterStates` for the computed `to_enter` set (document order).
    fn enter_states(&mut self, chart: &Chart, ev: &EventRef<'_>) {
        let to_enter = mem::take(&mut self.s.to_enter);
        let default_entry = mem::take(&mut self.s.default_entry);
        let default_history = mem::take(&mut self.s.default_history);
        self.s.completed.clear();
        let was_done = self.state.done;
        for x in to_enter.iter() {
            let st = chart.state(x);
            self.state.active.insert(x);
            self.exec_all(chart, &st.entry, ev);
            for (index, timer) in st.after.iter().enumerate() {
                let delay_ms = match &timer.computed {
                    Some((delay, _)) => self.host.delay(*delay, &self.context),
                    None => timer.delay_ms,
                };
                let due = self.state.now_ms.saturating_add(delay_ms);
                self.state.schedule(due, TimerKind::After { state: x, index: index as u16 });
            }
            if default_entry.contains(x)
                && let Some(init) = &st.initial
            {
                self.exec_all(chart, &init.actions, ev);
            }
            for &h in st.history_children.iter() {
                if default_history.contains(h)
                    && let Some(d) = &chart.state(h).history_default
                {
                    self.exec_all(chart, &d.actions, ev);
                }
            }
            if st.kind == StateKind::Final {
                self.final_entered(chart, x);
            }
        }
        self.s.to_enter = to_enter;
        self.s.default_entry = default_entry;
        self.s.default_history = default_history;
        if self.state.done && !was_done {
            self.halt_exit(chart, ev);
        }
    }

    /// Reaching a top-level final state: exit actions of every active state, reverse document
    /// order (SCXML `exitInterpreter`, XState v5 `done`). The configuration itself is kept.
    fn halt_exit(&mut self, chart: &Chart, ev: &EventRef<'_>) {
        let active = self.state.active.clone();
        for x in active.iter_rev() {
            self.exec_all(chart, &chart.state(x).exit, ev);
        }
    }

    /// Done events for a final state just entered; halts on a top-level final state.
    fn final_entered(&mut self, chart: &Chart, x: StateId) {
        let parent = chart.state(x).parent.unwrap_or(StateId::ROOT);
        let pk = chart.state(parent).kind;
        if pk == StateKind::Compound {
            if parent == StateId::ROOT {
                self.state.done = true;
                return;
            }
            if let Some(e) = &chart.state(parent).done_event {
                self.s.internal.push_back(Queued::Named(e.clone(), EventKind::Internal));
            }
        }
        // Walk up through parallel ancestors whose regions are now all final.
        let mut marker = if pk == StateKind::Parallel { Some(parent) } else { chart.state(parent).parent };
        while let Some(m) = marker {
            if chart.state(m).kind != StateKind::Parallel
                || self.s.completed.contains(m)
                || !in_final_state(chart, &self.state.active, m)
            {
                break;
            }
            self.s.completed.insert(m);
            if m == StateId::ROOT {
                self.state.done = true;
                return;
            }
            if let Some(e) = &chart.state(m).done_event {
                self.s.internal.push_back(Queued::Named(e.clone(), EventKind::Internal));
            }
            marker = chart.state(m).parent;
        }
    }

    /// The macrostep loop: eventless transitions first, then one internal event at a time.
    fn macrostep(&mut self, chart: &Chart, current: &mut Current<'_>) -> Result<(), RunError> {
        while !self.state.done {
            self.select(chart, Matcher::Eventless, &current.event_ref(chart));
            if self.s.enabled.is_empty() {
                let Some(q) = self.s.internal.pop_front() else { break };
                *current = Current::Queued(q);
                self.select(chart, current.matcher(), &current.event_ref(chart));
                if self.s.enabled.is_empty() {
                    continue;
                }
            }
            self.count_step()?;
            self.remove_conflicts(chart);
            self.microstep(chart, &current.event_ref(chart));
        }
        self.after_halt();
        Ok(())
    }

    /// One external event: its microstep, then the macrostep.
    fn handle_external(&mut self, chart: &Chart, current: &mut Current<'_>) -> Result<(), RunError> {
        if self.state.done {
            return Ok(());
        }
        self.select(chart, current.matcher(), &current.event_ref(chart));
        if !self.s.enabled.is_empty() {
            self.count_step()?;
            self.remove_conflicts(chart);
            self.microstep(chart, &current.event_ref(chart));
        }
        self.macrostep(chart, current)
    }

    /// Handles queued external events one at a time until the queue is empty.
    fn drain_external(&mut self, chart: &Chart) -> Result<(), RunError> {
        while let Some(q) = self.s.external.pop_front() {
            if self.state.done {
                break;
            }
            let mut current = Current::Queued(q);
            self.handle_external(chart, &mut current)?;
        }
        self.after_halt();
        Ok(())
    }

    /// Once done, nothing is pending any more.
    fn after_halt(&mut self) {
        if self.state.done {
            self.s.internal.clear();
            self.s.external.clear();
            self.state.timers.clear();
        }
    }
}
