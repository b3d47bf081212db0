//! Event domains: where an emitted event is routed beyond the local broker (Arvo's `ArvoDomain`).
//!
//! An emitted event carries at most one `domain`. `None` (Arvo's `LOCAL`) keeps it on the local
//! broker; any other value tells the broker to hand the event to whatever serves that domain (a
//! human-approval inbox, another cluster, …). Handlers and orchestrators declare the domains of
//! what they emit **symbolically** with [`Domain`], and each symbol is resolved per emitted event
//! against a [`DomainContext`] ([`Domain::resolve`]). One event is emitted per **unique** resolved
//! domain ([`resolve_all`]).
//!
//! | [`Domain`] | Arvo token | Resolves to |
//! |---|---|---|
//! | [`Local`](Domain::Local) | `null` / empty | `None` |
//! | [`FromEventContract`](Domain::FromEventContract) | `domain.contract.inherit` | the emitted event's contract domain ([`DomainContext::event_contract_domain`]) |
//! | [`FromSelfContract`](Domain::FromSelfContract) | `domain.contract.self.inherit` | the emitting handler's contract domain |
//! | [`FromTriggeringEvent`](Domain::FromTriggeringEvent) | `domain.event.inherit` | the triggering event's `domain` |
//! | [`FromCurrentSubject`](Domain::FromCurrentSubject) | `domain.event.current.subject` | `execution.domain` of the current subject, `None` if it is not an orchestration subject |
//! | [`FromParentSubject`](Domain::FromParentSubject) | `domain.parent.subject` | `execution.domain` of the parent subject, `None` without (a parsable) one |
//! | [`OrchestrationContext`](Domain::OrchestrationContext) | `domain.orchestration.context` | see below |
//! | [`Named`](Domain::Named) | any other string | itself (must match `^[a-z0-9.]+$`) |
//!
//! [`OrchestrationContext`](Domain::OrchestrationContext), the default of handlers and of
//! orchestrator completions and system errors, routes responses back through the orchestration
//! chain:
//! - **without a parent subject** (a handler or a root orchestration): `None` if the triggering
//!   event's domain is `None`; `None` if the current subject's domain equals the triggering event's
//!   domain; otherwise the current subject's domain;
//! - **with a parent subject** (a child orchestration): `None` if the current and parent subjects'
//!   domains are equal; otherwise the parent subject's domain.
//!
//! ```
//! use orchestrator::domain::{Domain, DomainContext, resolve_all};
//! use orchestrator::event::Event;
//!
//! let trigger = Event::builder()
//!     .source("com.test.client")
//!     .r#type("com.calc.add")
//!     .subject("plain-subject")
//!     .domain("external.review")
//!     .data_json(serde_json::json!({}))
//!     .build()?;
//! let ctx = DomainContext::for_event(&trigger).self_contract_domain(Some("calc"));
//!
//! let domains = [
//!     Domain::FromTriggeringEvent,
//!     Domain::FromSelfContract,
//!     "external.review".parse()?, // a literal domain, equal to the first once resolved
//!     Domain::Local,
//! ];
//! assert_eq!(
//!     resolve_all(&domains, &ctx),
//!     vec![Some("external.review".to_owned()), Some("calc".to_owned()), None]
//! );
//! assert_eq!(Domain::OrchestrationContext.to_string(), "domain.orchestration.context");
//! assert!("Not A Domain".parse::<Domain>().is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::event::Event;
use crate::rules;
use crate::subject::Subject;

/// Arvo's token for [`Domain::FromEventContract`].
pub const FROM_EVENT_CONTRACT: &str = "domain.contract.inherit";
/// Arvo's token for [`Domain::FromSelfContract`].
pub const FROM_SELF_CONTRACT: &str = "domain.contract.self.inherit";
/// Arvo's token for [`Domain::FromTriggeringEvent`].
pub const FROM_TRIGGERING_EVENT: &str = "domain.event.inherit";
/// Arvo's token for [`Domain::FromCurrentSubject`].
pub const FROM_CURRENT_SUBJECT: &str = "domain.event.current.subject";
/// Arvo's token for [`Domain::FromParentSubject`].
pub const FROM_PARENT_SUBJECT: &str = "domain.parent.subject";
/// Arvo's token for [`Domain::OrchestrationContext`].
pub const ORCHESTRATION_CONTEXT: &str = "domain.orchestration.context";

/// A domain to emit an event in, literal or resolved from the emission's context
/// (see the [module documentation](self) for the resolution table).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Domain {
    /// No domain: the event stays on the local broker (Arvo's `LOCAL`, `null`).
    #[default]
    Local,
    /// The domain of the contract that defines the emitted event (`domain.contract.inherit`).
    /// For a service handler this is its own contract.
    FromEventContract,
    /// The domain of the emitting handler's own contract (`domain.contract.self.inherit`).
    FromSelfContract,
    /// The triggering event's `domain` (`domain.event.inherit`).
    FromTriggeringEvent,
    /// `execution.domain` of the current subject (`domain.event.current.subject`).
    FromCurrentSubject,
    /// `execution.domain` of the parent orchestration subject (`domain.parent.subject`).
    FromParentSubject,
    /// Route back through the orchestration chain (`domain.orchestration.context`); the default
    /// for handler outputs and for completions and system errors.
    OrchestrationContext,
    /// A literal domain, `^[a-z0-9.]+$`. Build it with [`Domain::named`] or [`str::parse`], which
    /// check the rule; a value built directly that breaks it makes the emitted event fail to build.
    Named(String),
}

/// Why a string is not a [`Domain`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    /// A literal domain that breaks `^[a-z0-9.]+$`.
    #[error("invalid domain '{value}': {rule}", rule = rules::DOMAIN_RULE)]
    Invalid {
        /// The rejected value.
        value: String,
    },
    /// [`Domain::named`] was given one of the symbolic tokens.
    #[error(
        "'{value}' is a symbolic domain token, not a literal domain: use `Domain::{variant:?}` (or `str::parse`)"
    )]
    Symbolic {
        /// The token.
        value: String,
        /// The variant it stands for.
        variant: Domain,
    },
}

impl Domain {
    /// A literal domain; it must match `^[a-z0-9.]+$` and must not be a symbolic token.
    ///
    /// ```
    /// use orchestrator::domain::{Domain, DomainError};
    /// assert_eq!(Domain::named("human.interaction"), Ok(Domain::Named("human.interaction".into())));
    /// assert!(matches!(Domain::named("Human"), Err(DomainError::Invalid { .. })));
    /// assert!(matches!(Domain::named("domain.event.inherit"), Err(DomainError::Symbolic { .. })));
    /// ```
    pub fn named(value: impl Into<String>) -> Result<Self, DomainError> {
        let value = value.into();
        if let Some(variant) = Self::symbolic(&value) {
            return Err(DomainError::Symbolic { value, variant });
        }
        if !rules::is_domain(&value) {
            return Err(DomainError::Invalid { value });
        }
        Ok(Self::Named(value))
    }

    /// Parses Arvo's representation: `None` (null) or an empty string is [`Domain::Local`], a
    /// symbolic token is its variant, anything else a checked literal.
    pub fn from_arvo(value: Option<&str>) -> Result<Self, DomainError> {
        match value {
            None | Some("") => Ok(Self::Local),
            Some(v) => Self::symbolic(v).map_or_else(|| Self::named(v), Ok),
        }
    }

    /// Arvo's representation: `None` for [`Domain::Local`], else the token or literal.
    pub fn as_arvo(&self) -> Option<&str> {
        Some(match self {
            Self::Local => return None,
            Self::FromEventContract => FROM_EVENT_CONTRACT,
            Self::FromSelfContract => FROM_SELF_CONTRACT,
            Self::FromTriggeringEvent => FROM_TRIGGERING_EVENT,
            Self::FromCurrentSubject => FROM_CURRENT_SUBJECT,
            Self::FromParentSubject => FROM_PARENT_SUBJECT,
            Self::OrchestrationContext => ORCHESTRATION_CONTEXT,
            Self::Named(name) => name,
        })
    }

    /// True for the variants resolved from context (everything but `Local` and `Named`).
    pub fn is_symbolic(&self) -> bool {
        !matches!(self, Self::Local | Self::Named(_))
    }

    fn symbolic(token: &str) -> Option<Self> {
        Some(match token {
            FROM_EVENT_CONTRACT => Self::FromEventContract,
            FROM_SELF_CONTRACT => Self::FromSelfContract,
            FROM_TRIGGERING_EVENT => Self::FromTriggeringEvent,
            FROM_CURRENT_SUBJECT => Self::FromCurrentSubject,
            FROM_PARENT_SUBJECT => Self::FromParentSubject,
            ORCHESTRATION_CONTEXT => Self::OrchestrationContext,
            _ => return None,
        })
    }

    /// Resolves this domain for one emitted event (Arvo's `resolveEventDomain`); `None` is the
    /// local broker.
    pub fn resolve(&self, ctx: &DomainContext<'_>) -> Option<String> {
        match self {
            Self::Local => None,
            Self::FromEventContract => ctx.event_contract_domain.map(str::to_owned),
            Self::FromSelfContract => ctx.self_contract_domain.map(str::to_owned),
            Self::FromTriggeringEvent => ctx.triggering_event.domain().map(str::to_owned),
            Self::FromCurrentSubject => ctx.current_subject_domain(),
            Self::FromParentSubject => ctx.parent_subject_domain(),
            Self::OrchestrationContext => {
                let current = ctx.current_subject_domain();
                if ctx.parent_subject.is_none() {
                    // A handler or a root orchestration.
                    let triggering = ctx.triggering_event.domain();
                    if triggering.is_none() || current.as_deref() == triggering {
                        return None;
                    }
                    // A cross-domain call: route back to the orchestration's domain.
                    return current;
                }
                // A child orchestration: back to the parent's domain unless it is the same.
                let parent = ctx.parent_subject_domain();
                if current == parent { None } else { parent }
            }
            // Empty only when built directly: Arvo treats an empty string as null.
            Self::Named(name) if name.is_empty() => None,
            Self::Named(name) => Some(name.clone()),
        }
    }
}

/// Resolves every domain and removes duplicates **after** resolution, keeping the first-seen
/// order: one emitted event per returned entry.
pub fn resolve_all<'d>(
    domains: impl IntoIterator<Item = &'d Domain>,
    ctx: &DomainContext<'_>,
) -> Vec<Option<String>> {
    let mut out: Vec<Option<String>> = Vec::new();
    for domain in domains {
        let resolved = domain.resolve(ctx);
        if !out.contains(&resolved) {
            out.push(resolved);
        }
    }
    out
}

/// What a symbolic [`Domain`] is resolved against: a cheap, borrowed view of one emission.
///
/// | Who emits | `parent_subject` | `current_subject` | `self_contract_domain` | `event_contract_domain` |
/// |---|---|---|---|---|
/// | service handler, outputs and system errors | `None` | the triggering event's subject | its contract's | its contract's |
/// | orchestrator, service request | the workflow's parent subject | the triggering event's subject | self contract's | the service contract's |
/// | orchestrator, completion or system error | the workflow's parent subject | the triggering event's subject | self contract's | self contract's |
/// | orchestrator, emit of a type in no contract | the workflow's parent subject | the triggering event's subject | self contract's | `None` |
#[derive(Debug, Clone, Copy)]
pub struct DomainContext<'a> {
    /// The parent orchestration subject (child workflows); `None` for handlers and root workflows.
    pub parent_subject: Option<&'a str>,
    /// The current subject (the triggering event's subject).
    pub current_subject: &'a str,
    /// The emitter's own contract domain.
    pub self_contract_domain: Option<&'a str>,
    /// The domain of the contract defining the emitted event (`None` when there is no contract).
    pub event_contract_domain: Option<&'a str>,
    /// The event being handled.
    pub triggering_event: &'a Event,
}

impl<'a> DomainContext<'a> {
    /// A context for emissions triggered by `event`: current subject = the event's subject, no
    /// parent subject, no contract domains.
    pub fn for_event(event: &'a Event) -> Self {
        Self {
            parent_subject: None,
            current_subject: event.subject(),
            self_contract_domain: None,
            event_contract_domain: None,
            triggering_event: event,
        }
    }

    /// Sets the parent subject.
    #[must_use]
    pub fn parent_subject(mut self, parent: Option<&'a str>) -> Self {
        self.parent_subject = parent;
        self
    }

    /// Sets the current subject.
    #[must_use]
    pub fn current_subject(mut self, subject: &'a str) -> Self {
        self.current_subject = subject;
        self
    }

    /// Sets the emitter's own contract domain.
    #[must_use]
    pub fn self_contract_domain(mut self, domain: Option<&'a str>) -> Self {
        self.self_contract_domain = domain;
        self
    }

    /// Sets the emitted event's contract domain.
    #[must_use]
    pub fn event_contract_domain(mut self, domain: Option<&'a str>) -> Self {
        self.event_contract_domain = domain;
        self
    }

    /// Sets both contract domains (a service handler: its contract is also the event contract).
    #[must_use]
    pub fn contract_domain(self, domain: Option<&'a str>) -> Self {
        self.self_contract_domain(domain).event_contract_domain(domain)
    }

    fn current_subject_domain(&self) -> Option<String> {
        // The triggering event caches its parsed subject: reuse it when it is the current one.
        if self.current_subject == self.triggering_event.subject() {
            // OpenTelemetry: record the parse error on the active span ("Falling back to LOCAL").
            return self.triggering_event.orchestration_subject().ok()?.domain().map(str::to_owned);
        }
        subject_domain(self.current_subject)
    }

    fn parent_subject_domain(&self) -> Option<String> {
        subject_domain(self.parent_subject?)
    }
}

/// `execution.domain` of an orchestration subject; `None` when it has none or does not parse.
fn subject_domain(subject: &str) -> Option<String> {
    // OpenTelemetry: record the parse error on the active span ("Falling back to LOCAL").
    Subject::parse(subject).ok()?.domain().map(str::to_owned)
}

impl FromStr for Domain {
    type Err = DomainError;

    /// Arvo's string form: empty is [`Domain::Local`], a token its variant, else a checked literal.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_arvo(Some(s))
    }
}

impl TryFrom<&str> for Domain {
    type Error = DomainError;
    fn try_from(value: &str) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl TryFrom<String> for Domain {
    type Error = DomainError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        match Self::symbolic(&value) {
            Some(symbolic) => Ok(symbolic),
            None if value.is_empty() => Ok(Self::Local),
            None => Self::named(value),
        }
    }
}

/// The token or literal; [`Domain::Local`] displays as the empty string (which parses back to it).
impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_arvo().unwrap_or_default())
    }
}

/// As Arvo writes it: `null` for [`Domain::Local`], else the token or literal.
impl Serialize for Domain {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_arvo().serialize(serializer)
    }
}

/// Accepts `null`, `""`, a token or a literal that satisfies `^[a-z0-9.]+$`.
impl<'de> Deserialize<'de> for Domain {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Option::<String>::deserialize(deserializer)? {
            None => Ok(Self::Local),
            Some(value) => Self::try_from(value).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip() {
        for d in [
            Domain::Local,
            Domain::FromEventContract,
            Domain::FromSelfContract,
            Domain::FromTriggeringEvent,
            Domain::FromCurrentSubject,
            Domain::FromParentSubject,
            Domain::OrchestrationContext,
            Domain::Named("a.b".into()),
        ] {
            assert_eq!(d.to_string().parse::<Domain>().unwrap(), d);
            let json = serde_json::to_value(&d).unwrap();
            assert_eq!(serde_json::from_value::<Domain>(json).unwrap(), d);
        }
        assert_eq!(serde_json::to_value(Domain::Local).unwrap(), serde_json::Value::Null);
    }
}
