//! [`MachineState`]: everything that must survive a restart: the active configuration (a
//! [`StateSet`]), stored history values, pending timers (delayed sends and `after` timers: XState
//! loses them on restart, we do not), the simulated clock and the done flag.
//!
//! ## Serialized forms
//!
//! * [`MachineState::to_bytes`] / [`MachineState::from_bytes`]: a compact binary form. Byte 0
//!   is the format version ([`FORMAT_VERSION`]); then the chart [fingerprint](crate::Chart::fingerprint)
//!   (8 bytes LE) and LEB128 varints: state count, clock, next timer sequence number, flags,
//!   active states (delta-encoded ids), history entries, timers. A wrong version, another chart,
//!   truncation or an inconsistent value is a typed [`StateCodecError`].
//! * serde: a self-describing struct with the same content and a `version` field, checked on
//!   deserialization. Checks that need the chart run in [`MachineState::validate`] (done by
//!   [`Interpreter::restore`](crate::Interpreter::restore)).
//!
//! States are stored by id (document-order index); the fingerprint guarantees the ids are read
//! against the same state tree. Context is the host's and is persisted by the host. The
//! internal and external event queues are not stored: every call runs to completion, so they
//! are empty between calls (after a [`RunError`](crate::RunError) their leftovers are dropped).

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::action::EventName;
use crate::bitset::StateSet;
use crate::model::{Chart, StateId, StateKind};

/// Version byte of [`MachineState::to_bytes`] and of the serde form.
pub const FORMAT_VERSION: u8 = 1;

/// What a pending timer will deliver.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TimerKind {
    /// The `after` timer number `index` of `state` (cancelled when `state` is exited).
    After {
        /// The state that started it.
        state: StateId,
        /// Index in [`StateNode::after`](crate::StateNode::after).
        index: u16,
    },
    /// A delayed send (survives state exits; cancelled only by id).
    Send {
        /// The event to deliver.
        event: EventName,
        /// Cancel id.
        id: Option<EventName>,
    },
}

/// A timer waiting for the clock.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PendingTimer {
    pub(crate) due_ms: u64,
    pub(crate) seq: u64,
    pub(crate) kind: TimerKind,
}

impl PendingTimer {
    /// Clock value at which it is delivered.
    pub fn due_ms(&self) -> u64 {
        self.due_ms
    }
    /// Scheduling order (ties on `due_ms` are delivered by ascending `seq`).
    pub fn seq(&self) -> u64 {
        self.seq
    }
    /// What it delivers.
    pub fn kind(&self) -> &TimerKind {
        &self.kind
    }
    /// The event name it delivers.
    pub fn event_name<'a>(&'a self, chart: &'a Chart) -> &'a str {
        match &self.kind {
            TimerKind::After { state, index } => &chart.state(*state).after[usize::from(*index)].event,
            TimerKind::Send { event, .. } => event,
        }
    }
}

/// The persistent state of one running machine (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "SerializedState")]
pub struct MachineState {
    pub(crate) fingerprint: u64,
    pub(crate) active: StateSet,
    pub(crate) history: Vec<Option<StateSet>>,
    /// Sorted by `(due_ms, seq)`.
    pub(crate) timers: Vec<PendingTimer>,
    pub(crate) now_ms: u64,
    pub(crate) next_seq: u64,
    pub(crate) started: bool,
    pub(crate) done: bool,
}

/// Why a serialized [`MachineState`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StateCodecError {
    /// No bytes.
    #[error("empty machine state")]
    Empty,
    /// The format version is not one this build reads.
    #[error("unsupported machine-state format version {found} (this build reads version {supported})")]
    UnsupportedVersion {
        /// Version found.
        found: u8,
        /// Version supported.
        supported: u8,
    },
    /// The state was saved from a different chart.
    #[error("machine state belongs to another chart (fingerprint {found:#018x}, expected {expected:#018x})")]
    ChartMismatch {
        /// This chart's fingerprint.
        expected: u64,
        /// The stored one.
        found: u64,
    },
    /// Ended early.
    #[error("truncated machine state")]
    Truncated,
    /// Bytes after the end.
    #[error("{0} unexpected trailing bytes in machine state")]
    TrailingBytes(usize),
    /// An over-long varint.
    #[error("malformed integer in machine state")]
    BadInteger,
    /// A non-UTF-8 event name or id.
    #[error("invalid UTF-8 in machine state")]
    BadUtf8,
    /// A field that does not fit this chart (state id, history slot, timer...).
    #[error("invalid machine state: {0}")]
    Invalid(&'static str),
}

impl MachineState {
    /// A not-yet-started machine of `chart`.
    pub(crate) fn new(chart: &Chart) -> Self {
        Self {
            fingerprint: chart.fingerprint(),
            active: StateSet::new(chart.len()),
            history: vec![None; chart.history_nodes().len()],
            timers: Vec::new(),
            now_ms: 0,
            next_seq: 0,
            started: false,
            done: false,
        }
    }

    /// Whether the machine has been started.
    pub fn is_started(&self) -> bool {
        self.started
    }
    /// Whether a top-level final state was reached (events are then ignored).
    pub fn is_done(&self) -> bool {
        self.done
    }
    /// The simulated clock.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }
    /// The chart fingerprint this state belongs to.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }
    /// Active states (root included), as a bitset.
    pub fn active(&self) -> &StateSet {
        &self.active
    }
    /// Whether a state is active.
    pub fn is_active(&self, state: StateId) -> bool {
        self.active.contains(state)
    }
    /// Active atomic (and final) states in document order.
    pub fn active_atomic<'a>(&'a self, chart: &'a Chart) -> impl Iterator<Item = StateId> + 'a {
        self.active.iter().filter(|s| chart.atomic.contains(*s))
    }
    /// Paths of the active atomic states, in document order (what fixtures `expect`).
    pub fn active_atomic_paths<'a>(&'a self, chart: &'a Chart) -> Vec<&'a str> {
        self.active_atomic(chart).map(|s| chart.path(s)).collect()
    }
    /// The stored history of a history state, if any.
    pub fn history_of(&self, chart: &Chart, history_state: StateId) -> Option<&StateSet> {
        let slot = chart.state(history_state).history_slot?;
        self.history.get(usize::from(slot))?.as_ref()
    }
    /// Pending timers sorted by `(due_ms, seq)`: delivery order.
    pub fn pending_timers(&self) -> &[PendingTimer] {
        &self.timers
    }
    /// When the next timer is due.
    pub fn next_due(&self) -> Option<u64> {
        self.timers.first().map(|t| t.due_ms)
    }

    /// Inserts a timer keeping `(due_ms, seq)` order; returns its seq.
    pub(crate) fn schedule(&mut self, due_ms: u64, kind: TimerKind) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let pos = self.timers.partition_point(|t| t.due_ms <= due_ms);
        self.timers.insert(pos, PendingTimer { due_ms, seq, kind });
        seq
    }

    /// Checks this state against `chart`: fingerprint, sizes, legal configuration, history
    /// values inside their parents, timers referring to active states.
    pub fn validate(&self, chart: &Chart) -> Result<(), StateCodecError> {
        if self.fingerprint != chart.fingerprint() {
            return Err(StateCodecError::ChartMismatch {
                expected: chart.fingerprint(),
                found: self.fingerprint,
            });
        }
        if self.active.capacity() != chart.len() {
            return Err(StateCodecError::Invalid("state count differs from the chart"));
        }
        if self.started {
            if !chart.is_legal_configuration(&self.active) {
                return Err(StateCodecError::Invalid("illegal configuration"));
            }
        } else if !self.active.is_empty() || !self.timers.is_empty() || self.done {
            return Err(StateCodecError::Invalid("a machine that never started has no state"));
        }
        if self.history.len() != chart.history_nodes().len() {
            return Err(StateCodecError::Invalid("history slot count differs from the chart"));
        }
        for (slot, value) in self.history.iter().enumerate() {
            let Some(value) = value else { continue };
            let h = chart.history_nodes()[slot];
            let parent = chart.state(h).parent.unwrap_or(StateId::ROOT);
            let deep = matches!(chart.state(h).kind, StateKind::History { deep: true });
            let ok = value.capacity() == chart.len()
                && value.iter().all(|s| {
                    if deep {
                        chart.is_descendant(s, parent) && chart.atomic.contains(s)
                    } else {
                        chart.state(s).parent == Some(parent)
                            && !matches!(chart.state(s).kind, StateKind::History { .. })
                    }
                });
            if !ok {
                return Err(StateCodecError::Invalid("history value outside its parent"));
            }
        }
        let mut prev: Option<(u64, u64)> = None;
        for t in &self.timers {
            if t.seq >= self.next_seq || prev.is_some_and(|p| p >= (t.due_ms, t.seq)) {
                return Err(StateCodecError::Invalid("timers out of order"));
            }
            prev = Some((t.due_ms, t.seq));
            if let TimerKind::After { state, index } = &t.kind
                && (state.index() >= chart.len()
                    || usize::from(*index) >= chart.state(*state).after.len()
                    || !self.active.contains(*state))
            {
                return Err(StateCodecError::Invalid("after timer of an inactive or unknown state"));
            }
        }
        Ok(())
    }

    /// The compact binary form (see the [module docs](self)).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.timers.len() * 8);
        out.push(FORMAT_VERSION);
        out.extend_from_slice(&self.fingerprint.to_le_bytes());
        put_varint(&mut out, self.active.capacity() as u64);
        put_varint(&mut out, self.now_ms);
        put_varint(&mut out, self.next_seq);
        out.push(u8::from(self.started) | (u8::from(self.done) << 1));
        put_set(&mut out, &self.active);
        put_varint(&mut out, self.history.iter().filter(|h| h.is_some()).count() as u64);
        for (slot, value) in self.history.iter().enumerate() {
            if let Some(value) = value {
                put_varint(&mut out, slot as u64);
                put_set(&mut out, value);
            }
        }
        put_varint(&mut out, self.timers.len() as u64);
        for t in &self.timers {
            put_varint(&mut out, t.due_ms);
            put_varint(&mut out, t.seq);
            match &t.kind {
                TimerKind::After { state, index } => {
                    out.push(0);
                    put_varint(&mut out, u64::from(state.0));
                    put_varint(&mut out, u64::from(*index));
                }
                TimerKind::Send { event, id } => {
                    out.push(1);
                    put_str(&mut out, event);
                    match id {
                        Some(id) => {
                            out.push(1);
                            put_str(&mut out, id);
                        }
                        None => out.push(0),
                    }
                }
            }
        }
        out
    }

    /// Reads [`MachineState::to_bytes`] output and [validates](Self::validate) it against `chart`.
    pub fn from_bytes(chart: &Chart, bytes: &[u8]) -> Result<Self, StateCodecError> {
        let mut r = Reader { bytes, pos: 0 };
        let version = r.byte().map_err(|_| StateCodecError::Empty)?;
        if version != FORMAT_VERSION {
            return Err(StateCodecError::UnsupportedVersion { found: version, supported: FORMAT_VERSION });
        }
        let fingerprint = u64::from_le_bytes(r.take(8)?.try_into().map_err(|_| StateCodecError::Truncated)?);
        if fingerprint != chart.fingerprint() {
            return Err(StateCodecError::ChartMismatch { expected: chart.fingerprint(), found: fingerprint });
        }
        let count = r.varint()?;
        if count != chart.len() as u64 {
            return Err(StateCodecError::Invalid("state count differs from the chart"));
        }
        let count = chart.len();
        let now_ms = r.varint()?;
        let next_seq = r.varint()?;
        let flags = r.byte()?;
        if flags > 3 {
            return Err(StateCodecError::Invalid("unknown flags"));
        }
        let active = r.set(count)?;
        let mut history = vec![None; chart.history_nodes().len()];
        for _ in 0..r.varint()? {
            let slot = usize::try_from(r.varint()?).map_err(|_| StateCodecError::BadInteger)?;
            let value = r.set(count)?;
            let entry = history.get_mut(slot).ok_or(StateCodecError::Invalid("unknown history slot"))?;
            *entry = Some(value);
        }
        let n_timers = r.varint()?;
        let mut timers = Vec::with_capacity(usize::try_from(n_timers.min(1024)).unwrap_or(0));
        for _ in 0..n_timers {
            let due_ms = r.varint()?;
            let seq = r.varint()?;
            let kind = match r.byte()? {
                0 => {
                    let state = r.varint()?;
                    let index = r.varint()?;
                    TimerKind::After {
                        state: StateId(
                            u16::try_from(state).map_err(|_| StateCodecError::Invalid("state id"))?,
                        ),
                        index: u16::try_from(index).map_err(|_| StateCodecError::Invalid("timer index"))?,
                    }
                }
                1 => {
                    let event = r.string()?.into();
                    let id = match r.byte()? {
                        0 => None,
                        1 => Some(r.string()?.into()),
                        _ => return Err(StateCodecError::Invalid("timer id flag")),
                    };
                    TimerKind::Send { event, id }
                }
                _ => return Err(StateCodecError::Invalid("timer kind")),
            };
            timers.push(PendingTimer { due_ms, seq, kind });
        }
        if r.pos != bytes.len() {
            return Err(StateCodecError::TrailingBytes(bytes.len() - r.pos));
        }
        let state = Self {
            fingerprint,
            active,
            history,
            timers,
            now_ms,
            next_seq,
            started: flags & 1 != 0,
            done: flags & 2 != 0,
        };
        state.validate(chart)?;
        Ok(state)
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

fn put_set(out: &mut Vec<u8>, set: &StateSet) {
    put_varint(out, set.len() as u64);
    let mut prev = 0u64;
    for s in set.iter() {
        let v = u64::from(s.0);
        put_varint(out, v - prev);
        prev = v;
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, StateCodecError> {
        let b = *self.bytes.get(self.pos).ok_or(StateCodecError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], StateCodecError> {
        let end = self.pos.checked_add(n).ok_or(StateCodecError::Truncated)?;
        let s = self.bytes.get(self.pos..end).ok_or(StateCodecError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    fn varint(&mut self) -> Result<u64, StateCodecError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return Err(StateCodecError::BadInteger);
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(StateCodecError::BadInteger)
    }

    fn string(&mut self) -> Result<String, StateCodecError> {
        let n = usize::try_from(self.varint()?).map_err(|_| StateCodecError::BadInteger)?;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| StateCodecError::BadUtf8)
    }

    fn set(&mut self, capacity: usize) -> Result<StateSet, StateCodecError> {
        let n = self.varint()?;
        let mut set = StateSet::new(capacity);
        let mut cur = 0u64;
        for i in 0..n {
            let delta = self.varint()?;
            if i > 0 && delta == 0 {
                return Err(StateCodecError::Invalid("state ids not ascending"));
            }
            cur = cur.checked_add(delta).ok_or(StateCodecError::BadInteger)?;
            if cur >= capacity as u64 {
                return Err(StateCodecError::Invalid("state id out of range"));
            }
            set.insert(StateId::from_index(cur as usize));
        }
        Ok(set)
    }
}

/// The serde form of [`MachineState`].
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SerializedState {
    version: u8,
    fingerprint: u64,
    states: u32,
    now_ms: u64,
    next_seq: u64,
    started: bool,
    done: bool,
    active: Vec<u16>,
    history_slots: u16,
    history: Vec<SerializedHistory>,
    timers: Vec<SerializedTimer>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SerializedHistory {
    slot: u16,
    states: Vec<u16>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SerializedTimer {
    due_ms: u64,
    seq: u64,
    #[serde(flatten)]
    kind: SerializedTimerKind,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum SerializedTimerKind {
    After { state: u16, index: u16 },
    Send { event: String, id: Option<String> },
}

/// Serialized as [`SerializedState`], written from a reference (no copy of the state).
impl Serialize for MachineState {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        SerializedStateRef {
            version: FORMAT_VERSION,
            fingerprint: self.fingerprint,
            states: self.active.capacity() as u32,
            now_ms: self.now_ms,
            next_seq: self.next_seq,
            started: self.started,
            done: self.done,
            active: Ids(&self.active),
            history_slots: self.history.len() as u16,
            history: HistoryRef(&self.history),
            timers: TimersRef(&self.timers),
        }
        .serialize(serializer)
    }
}

/// [`SerializedState`] borrowing the state: same fields, same order, same output.
#[derive(Serialize)]
#[serde(rename = "SerializedState")]
struct SerializedStateRef<'a> {
    version: u8,
    fingerprint: u64,
    states: u32,
    now_ms: u64,
    next_seq: u64,
    started: bool,
    done: bool,
    active: Ids<'a>,
    history_slots: u16,
    history: HistoryRef<'a>,
    timers: TimersRef<'a>,
}

/// The state ids of a set, as a sequence.
struct Ids<'a>(&'a StateSet);

impl Serialize for Ids<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|x| x.0))
    }
}

/// The recorded history slots, as [`SerializedHistory`] entries.
struct HistoryRef<'a>(&'a [Option<StateSet>]);

impl Serialize for HistoryRef<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename = "SerializedHistory")]
        struct Entry<'a> {
            slot: u16,
            states: Ids<'a>,
        }
        let entries = self.0.iter().enumerate();
        serializer.collect_seq(
            entries.filter_map(|(slot, v)| v.as_ref().map(|v| Entry { slot: slot as u16, states: Ids(v) })),
        )
    }
}

/// The pending timers, as [`SerializedTimer`] entries.
struct TimersRef<'a>(&'a [PendingTimer]);

impl Serialize for TimersRef<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename = "SerializedTimer")]
        struct Entry<'a> {
            due_ms: u64,
            seq: u64,
            #[serde(flatten)]
            kind: Kind<'a>,
        }
        #[derive(Serialize)]
        #[serde(rename = "SerializedTimerKind", tag = "kind", rename_all = "snake_case")]
        enum Kind<'a> {
            After { state: u16, index: u16 },
            Send { event: &'a str, id: Option<&'a str> },
        }
        serializer.collect_seq(self.0.iter().map(|t| Entry {
            due_ms: t.due_ms,
            seq: t.seq,
            kind: match &t.kind {
                TimerKind::After { state, index } => Kind::After { state: state.0, index: *index },
                TimerKind::Send { event, id } => Kind::Send { event, id: id.as_deref() },
            },
        }))
    }
}

#[cfg(test)]
impl From<MachineState> for SerializedState {
    fn from(s: MachineState) -> Self {
        Self {
            version: FORMAT_VERSION,
            fingerprint: s.fingerprint,
            states: s.active.capacity() as u32,
            now_ms: s.now_ms,
            next_seq: s.next_seq,
            started: s.started,
            done: s.done,
            active: s.active.iter().map(|x| x.0).collect(),
            history_slots: s.history.len() as u16,
            history: s
                .history
                .iter()
                .enumerate()
                .filter_map(|(slot, v)| {
                    v.as_ref().map(|v| SerializedHistory {
                        slot: slot as u16,
                        states: v.iter().map(|x| x.0).collect(),
                    })
                })
                .collect(),
            timers: s
                .timers
                .into_iter()
                .map(|t| SerializedTimer {
                    due_ms: t.due_ms,
                    seq: t.seq,
                    kind: match t.kind {
                        TimerKind::After { state, index } => {
                            SerializedTimerKind::After { state: state.0, index }
                        }
                        TimerKind::Send { event, id } => SerializedTimerKind::Send {
                            event: event.to_string(),
                            id: id.map(|i| i.to_string()),
                        },
                    },
                })
                .collect(),
        }
    }
}

impl TryFrom<SerializedState> for MachineState {
    type Error = StateCodecError;

    fn try_from(s: SerializedState) -> Result<Self, StateCodecError> {
        if s.version != FORMAT_VERSION {
            return Err(StateCodecError::UnsupportedVersion { found: s.version, supported: FORMAT_VERSION });
        }
        let cap = s.states as usize;
        let to_set = |ids: &[u16]| -> Result<StateSet, StateCodecError> {
            let mut set = StateSet::new(cap);
            for id in ids {
                if usize::from(*id) >= cap {
                    return Err(StateCodecError::Invalid("state id out of range"));
                }
                set.insert(StateId(*id));
            }
            Ok(set)
        };
        let mut history = vec![None; usize::from(s.history_slots)];
        for h in &s.history {
            let entry = history
                .get_mut(usize::from(h.slot))
                .ok_or(StateCodecError::Invalid("unknown history slot"))?;
            *entry = Some(to_set(&h.states)?);
        }
        let mut timers: Vec<PendingTimer> = s
            .timers
            .into_iter()
            .map(|t| PendingTimer {
                due_ms: t.due_ms,
                seq: t.seq,
                kind: match t.kind {
                    SerializedTimerKind::After { state, index } => {
                        TimerKind::After { state: StateId(state), index }
                    }
                    SerializedTimerKind::Send { event, id } => {
                        TimerKind::Send { event: event.into(), id: id.map(Into::into) }
                    }
                },
            })
            .collect();
        timers.sort_by_key(|t| (t.due_ms, t.seq));
        Ok(Self {
            fingerprint: s.fingerprint,
            active: to_set(&s.active)?,
            history,
            timers,
            now_ms: s.now_ms,
            next_seq: s.next_seq,
            started: s.started,
            done: s.done,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The borrowed serializer writes exactly what the owned `SerializedState` form writes.
    #[test]
    fn serializing_by_reference_matches_the_serde_form() {
        let set = |cap: usize, ids: &[u16]| {
            let mut set = StateSet::new(cap);
            for id in ids {
                set.insert(StateId(*id));
            }
            set
        };
        let bare = MachineState {
            fingerprint: 7,
            active: set(3, &[0]),
            history: Vec::new(),
            timers: Vec::new(),
            now_ms: 0,
            next_seq: 0,
            started: false,
            done: false,
        };
        let full = MachineState {
            fingerprint: 0xdead_beef_0123_4567,
            active: set(70, &[0, 2, 3, 65, 69]),
            history: vec![None, Some(set(70, &[2, 64])), None, Some(set(70, &[]))],
            timers: vec![
                PendingTimer { due_ms: 5, seq: 1, kind: TimerKind::After { state: StateId(2), index: 1 } },
                PendingTimer {
                    due_ms: 9,
                    seq: 2,
                    kind: TimerKind::Send { event: "ping".into(), id: Some("pp".into()) },
                },
                PendingTimer { due_ms: 9, seq: 3, kind: TimerKind::Send { event: "pong".into(), id: None } },
            ],
            now_ms: 4,
            next_seq: 4,
            started: true,
            done: true,
        };
        for state in [bare, full] {
            let owned = SerializedState::from(state.clone());
            assert_eq!(serde_json::to_string(&state).unwrap(), serde_json::to_string(&owned).unwrap());
            assert_eq!(serde_json::to_value(&state).unwrap(), serde_json::to_value(&owned).unwrap());
            let back: MachineState = serde_json::from_value(serde_json::to_value(&state).unwrap()).unwrap();
            assert_eq!(back, state);
        }
    }
}
