//! The checked machine: a flat state tree in document order, ready to validate as a chart and to
//! generate.

use proc_macro2::TokenStream;
use syn::{Attribute, Expr, Ident, LitStr, Type, Visibility};

/// A checked machine.
pub(crate) struct Model {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub name: Ident,
    pub version: Option<LitStr>,
    /// The self contract version (`None` only after an error).
    pub contract: Option<Type>,
    pub services: Vec<Service>,
    /// The declared signals (`signals: { key: ContractVersion }`): events the workflow accepts
    /// from outside, typed by the contract's accepted payload.
    pub signals: Vec<Service>,
    /// The declared notifications (`notifications: { key: ContractVersion }`): outbox methods
    /// emitting an event that expects no reply.
    pub notifications: Vec<Service>,
    /// The `services` key (or the machine name), where generated service APIs are spanned.
    pub services_span: proc_macro2::Span,
    pub context: Option<Type>,
    pub init: Option<Init>,
    pub output: Option<Expr>,
    /// States in document order (pre-order, history states included); `nodes[0]` is the root.
    /// A node's index is its `StateId` in the chart.
    pub nodes: Vec<Node>,
    /// Typed event variants for `service::Payload` triggers.
    pub events: Vec<EventVariant>,
    /// Custom guards by `GuardId`.
    pub guards: Vec<Custom>,
    /// Custom actions by `ActionId`.
    pub actions: Vec<Custom>,
    /// Computed `after` delays by `DelayId`.
    pub delays: Vec<Custom>,
    /// The chart's fingerprint, when it built without errors.
    pub fingerprint: Option<u64>,
}

/// The `init` function and the arguments it takes.
pub(crate) struct Init {
    pub expr: Expr,
    pub form: InitForm,
}

/// How `init` is called, from the number of parameters of its closure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InitForm {
    /// `fn(&Input) -> Context`: a function path or a one-parameter closure.
    Input,
    /// `fn(&Input, &InitMeta) -> Context`: a two-parameter closure.
    InputMeta,
    /// A closure with another number of parameters (reported).
    Invalid,
}

/// A custom guard or action.
pub(crate) struct Custom {
    /// The user's function or closure.
    pub expr: Expr,
    /// The name given with `name = closure`, if any.
    pub name: Option<Ident>,
}

impl Custom {
    /// The name of computed delay `id` in the chart (an identifier): the name given with
    /// `name = ...`, a path's last segment, or `delay<id>`.
    pub(crate) fn delay_name(&self, id: usize) -> String {
        use syn::ext::IdentExt;
        if let Some(name) = &self.name {
            return name.unraw().to_string();
        }
        match &self.expr {
            Expr::Path(p) if p.qself.is_none() => match p.path.segments.last() {
                Some(s) => s.ident.unraw().to_string(),
                None => format!("delay{id}"),
            },
            _ => format!("delay{id}"),
        }
    }
}

/// A declared service.
pub(crate) struct Service {
    /// Its key (also its outbox method).
    pub key: Ident,
    /// Its contract version.
    pub ty: Type,
    /// `PascalCase` key, the prefix of its event variants.
    pub pascal: String,
    /// The system-error variant (`<Key>Error`).
    pub error_variant: Ident,
    /// Its retry policy (`key: Type { retry: { ... } }`), when declared and valid.
    pub retry: Option<super::retry::RetrySpec>,
}

/// A typed event variant: `<Service><Payload>(Payload)`.
pub(crate) struct EventVariant {
    /// An index into `services`, or into `signals` when `signal` is set.
    pub service: usize,
    /// The event is a signal's (`signals[service]`), not a service's.
    pub signal: bool,
    pub payload: Type,
    pub variant: Ident,
}

/// The kind of a state as declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Atomic, or compound with children.
    State,
    Parallel,
    Final,
    History {
        deep: bool,
    },
}

/// A state.
pub(crate) struct Node {
    /// `None` for the root.
    pub key: Option<Ident>,
    /// Absolute dot path (`""` for the root).
    pub path: String,
    pub parent: Option<usize>,
    pub kind: Kind,
    /// Children in declaration order, history states included.
    pub children: Vec<usize>,
    /// `initial:` targets (absolute paths).
    pub initial: Option<Vec<Target>>,
    /// The tokens of the `initial` value.
    pub initial_tokens: Option<TokenStream>,
    /// A history state's default targets and actions.
    pub history_default: Option<(Vec<Target>, Vec<Act>)>,
    pub history_tokens: Option<TokenStream>,
    pub entry: Vec<Act>,
    pub exit: Vec<Act>,
    /// In chart order: `on_done`, `on`, `always`, `after`.
    pub transitions: Vec<Trans>,
    /// The variant of this state in its parent's enum (`PascalCase` key).
    pub variant: Option<Ident>,
    /// The type of this state's value, for compound and parallel states and parallel regions.
    pub ty: Option<Ident>,
}

impl Node {
    /// Whether this state has child states other than history states.
    pub(crate) fn has_real_children(&self, nodes: &[Node]) -> bool {
        self.children.iter().any(|c| !matches!(nodes[*c].kind, Kind::History { .. }))
    }
}

/// A target path with its tokens.
#[derive(Clone)]
pub(crate) struct Target {
    pub path: String,
    pub tokens: TokenStream,
}

/// What a transition reacts to.
#[derive(Clone)]
pub(crate) enum Trig {
    /// An event by name (descriptor).
    Named(LitStr),
    /// `events[i]`.
    Service(usize),
    /// The system error of `services[i]`.
    ServiceError(usize),
    /// `done.state.<source>`.
    Done,
    /// Eventless.
    Always,
    /// `after` ms.
    After(u64),
    /// `after` the computed delay `delays[i]`.
    AfterComputed(usize),
    /// An unknown service (reported).
    Invalid,
}

/// A transition.
pub(crate) struct Trans {
    pub trig: Trig,
    /// The trigger's tokens (or the `always` / `on_done` / `after` key).
    pub trig_tokens: TokenStream,
    pub targets: Vec<Target>,
    /// The tokens of the target value (for multi-target errors).
    pub targets_tokens: Option<TokenStream>,
    pub guard: Option<Grd>,
    pub actions: Vec<Act>,
    pub reenter: bool,
}

/// A guard.
pub(crate) enum Grd {
    In(Target),
    NotIn(Target),
    Custom(usize),
}

/// An action.
#[derive(Clone)]
pub(crate) enum Act {
    Raise(LitStr),
    Send { event: LitStr, delay: Option<u64>, id: Option<LitStr> },
    Cancel(LitStr),
    Custom(usize),
}
