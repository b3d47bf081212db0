//! Domain resolution (`orchestrator::domain`): every row of Arvo's `resolveEventDomain` table,
//! the string tokens, literal validation and de-duplication after resolution.

#![allow(clippy::unwrap_used)]

use orchestrator::domain::{Domain, DomainContext, DomainError, resolve_all};
use orchestrator::event::Event;
use orchestrator::subject::Subject;
use serde_json::json;

fn subject(domain: Option<&str>) -> String {
    Subject::builder("arvo.orc.test.flow", "1.0.0", "com.test.client")
        .domain_opt(domain)
        .build()
        .unwrap()
        .as_str()
        .to_owned()
}

fn event(subject: &str, domain: Option<&str>) -> Event {
    Event::builder()
        .source("com.test.client")
        .r#type("com.test.request")
        .subject(subject)
        .domain_opt(domain)
        .data_json(json!({}))
        .build()
        .unwrap()
}

fn some(s: &str) -> Option<String> {
    Some(s.to_owned())
}

// ---------------------------------------------------------------------------------------------
// Tokens

#[test]
fn tokens_parse_and_display_as_arvo_writes_them() {
    let table = [
        (Domain::FromEventContract, "domain.contract.inherit"),
        (Domain::FromSelfContract, "domain.contract.self.inherit"),
        (Domain::FromTriggeringEvent, "domain.event.inherit"),
        (Domain::FromCurrentSubject, "domain.event.current.subject"),
        (Domain::FromParentSubject, "domain.parent.subject"),
        (Domain::OrchestrationContext, "domain.orchestration.context"),
        (Domain::Named("human.interaction".into()), "human.interaction"),
    ];
    for (domain, token) in table {
        assert_eq!(token.parse::<Domain>().unwrap(), domain, "{token}");
        assert_eq!(domain.to_string(), token);
        assert_eq!(domain.as_arvo(), Some(token));
        assert_eq!(serde_json::to_value(&domain).unwrap(), json!(token));
        assert_eq!(serde_json::from_value::<Domain>(json!(token)).unwrap(), domain);
        assert_eq!(Domain::try_from(token.to_owned()).unwrap(), domain);
    }
    assert!(Domain::FromParentSubject.is_symbolic());
    assert!(!Domain::Named("x".into()).is_symbolic());
    assert!(!Domain::Local.is_symbolic());
}

#[test]
fn null_and_empty_are_local() {
    assert_eq!(Domain::from_arvo(None).unwrap(), Domain::Local);
    assert_eq!(Domain::from_arvo(Some("")).unwrap(), Domain::Local);
    assert_eq!("".parse::<Domain>().unwrap(), Domain::Local);
    assert_eq!(Domain::default(), Domain::Local);
    assert_eq!(Domain::Local.as_arvo(), None);
    assert_eq!(Domain::Local.to_string(), "");
    assert_eq!(serde_json::to_value(Domain::Local).unwrap(), json!(null));
    assert_eq!(serde_json::from_value::<Domain>(json!(null)).unwrap(), Domain::Local);
    assert_eq!(serde_json::from_value::<Domain>(json!("")).unwrap(), Domain::Local);
}

#[test]
fn literal_domains_must_match_the_rule() {
    assert_eq!(Domain::named("calc").unwrap(), Domain::Named("calc".into()));
    assert_eq!(Domain::named("a.b.9").unwrap(), Domain::Named("a.b.9".into()));
    for bad in ["Human", "human interaction", "human-interaction", "human_interaction", "ü", ""] {
        let err = Domain::named(bad).unwrap_err();
        assert_eq!(err, DomainError::Invalid { value: bad.to_owned() }, "{bad:?}");
        assert!(err.to_string().contains("^[a-z0-9.]+$"), "{err}");
    }
    for bad in ["Human", "a b", "a-b"] {
        assert!(matches!(bad.parse::<Domain>(), Err(DomainError::Invalid { .. })), "{bad}");
        assert!(serde_json::from_value::<Domain>(json!(bad)).is_err(), "{bad}");
    }
    // A symbolic token is not a literal.
    assert_eq!(
        Domain::named("domain.event.inherit").unwrap_err(),
        DomainError::Symbolic {
            value: "domain.event.inherit".to_owned(),
            variant: Domain::FromTriggeringEvent
        }
    );
}

// ---------------------------------------------------------------------------------------------
// The table, row by row

#[test]
fn local_resolves_to_none() {
    let e = event(&subject(Some("x")), Some("y"));
    let ctx = DomainContext::for_event(&e).contract_domain(Some("calc")).parent_subject(Some("p"));
    assert_eq!(Domain::Local.resolve(&ctx), None);
    // An empty literal built directly is treated as null, as in Arvo.
    assert_eq!(Domain::Named(String::new()).resolve(&ctx), None);
}

#[test]
fn from_event_contract_is_the_event_contracts_domain() {
    let e = event("s", Some("trigger"));
    let ctx =
        DomainContext::for_event(&e).self_contract_domain(Some("self")).event_contract_domain(Some("svc"));
    assert_eq!(Domain::FromEventContract.resolve(&ctx), some("svc"));
    // No event contract (or one without a domain): null, not the self contract's.
    let ctx = ctx.event_contract_domain(None);
    assert_eq!(Domain::FromEventContract.resolve(&ctx), None);
}

#[test]
fn from_self_contract_is_the_handlers_contract_domain() {
    let e = event("s", Some("trigger"));
    let ctx =
        DomainContext::for_event(&e).self_contract_domain(Some("self")).event_contract_domain(Some("svc"));
    assert_eq!(Domain::FromSelfContract.resolve(&ctx), some("self"));
    assert_eq!(Domain::FromSelfContract.resolve(&ctx.self_contract_domain(None)), None);
}

#[test]
fn from_triggering_event_is_the_events_domain() {
    let with = event("s", Some("trigger"));
    assert_eq!(Domain::FromTriggeringEvent.resolve(&DomainContext::for_event(&with)), some("trigger"));
    let without = event("s", None);
    assert_eq!(Domain::FromTriggeringEvent.resolve(&DomainContext::for_event(&without)), None);
}

#[test]
fn from_current_subject_is_the_subjects_execution_domain() {
    let with = event(&subject(Some("sub.domain")), Some("other"));
    assert_eq!(Domain::FromCurrentSubject.resolve(&DomainContext::for_event(&with)), some("sub.domain"));
    let without = event(&subject(None), Some("other"));
    assert_eq!(Domain::FromCurrentSubject.resolve(&DomainContext::for_event(&without)), None);
    // Not an orchestration subject: null.
    let plain = event("not-an-orchestration-subject", Some("other"));
    assert_eq!(Domain::FromCurrentSubject.resolve(&DomainContext::for_event(&plain)), None);
    // An explicit current subject other than the event's is parsed too.
    let other = subject(Some("explicit"));
    let ctx = DomainContext::for_event(&plain).current_subject(&other);
    assert_eq!(Domain::FromCurrentSubject.resolve(&ctx), some("explicit"));
}

#[test]
fn from_parent_subject_is_the_parents_execution_domain() {
    let e = event(&subject(Some("child")), None);
    let parent = subject(Some("parent"));
    let ctx = DomainContext::for_event(&e).parent_subject(Some(&parent));
    assert_eq!(Domain::FromParentSubject.resolve(&ctx), some("parent"));
    assert_eq!(Domain::FromParentSubject.resolve(&ctx.parent_subject(None)), None);
    assert_eq!(Domain::FromParentSubject.resolve(&ctx.parent_subject(Some("garbage"))), None);
    let parent_without = subject(None);
    assert_eq!(Domain::FromParentSubject.resolve(&ctx.parent_subject(Some(&parent_without))), None);
}

#[test]
fn orchestration_context_without_parent() {
    let resolve = |current: Option<&str>, trigger: Option<&str>| {
        let e = event(&subject(current), trigger);
        Domain::OrchestrationContext.resolve(&DomainContext::for_event(&e))
    };
    // The triggering event is local → local, whatever the subject says.
    assert_eq!(resolve(Some("orc"), None), None);
    assert_eq!(resolve(None, None), None);
    // Same domain as the triggering event → local.
    assert_eq!(resolve(Some("orc"), Some("orc")), None);
    // Cross-domain call → back to the orchestration's domain.
    assert_eq!(resolve(Some("orc"), Some("external")), some("orc"));
    // ... which is null when the subject has no domain.
    assert_eq!(resolve(None, Some("external")), None);
    // A subject that does not parse has a null domain.
    let plain = event("plain-subject", Some("external"));
    assert_eq!(Domain::OrchestrationContext.resolve(&DomainContext::for_event(&plain)), None);
}

#[test]
fn orchestration_context_with_parent() {
    let resolve = |current: Option<&str>, parent: Option<&str>, trigger: Option<&str>| {
        let e = event(&subject(current), trigger);
        let parent = subject(parent);
        Domain::OrchestrationContext.resolve(&DomainContext::for_event(&e).parent_subject(Some(&parent)))
    };
    // Child and parent in the same domain → local (the trigger's domain does not matter).
    assert_eq!(resolve(Some("d"), Some("d"), Some("x")), None);
    assert_eq!(resolve(None, None, Some("x")), None);
    // Child in a different domain → the parent's domain.
    assert_eq!(resolve(Some("child"), Some("parent"), None), some("parent"));
    assert_eq!(resolve(None, Some("parent"), None), some("parent"));
    // Parent without a domain, child with one → the parent's (null) domain.
    assert_eq!(resolve(Some("child"), None, Some("child")), None);
    // An unparsable parent subject has a null domain.
    let e = event(&subject(Some("child")), None);
    let ctx = DomainContext::for_event(&e).parent_subject(Some("garbage"));
    assert_eq!(Domain::OrchestrationContext.resolve(&ctx), None);
    // An empty parent subject still counts as "has a parent" (Arvo checks `=== null`).
    let e = event(&subject(None), Some("external"));
    let ctx = DomainContext::for_event(&e).parent_subject(Some(""));
    assert_eq!(Domain::OrchestrationContext.resolve(&ctx), None);
}

#[test]
fn a_literal_is_used_as_is() {
    let e = event(&subject(Some("x")), Some("y"));
    let ctx = DomainContext::for_event(&e).contract_domain(Some("calc"));
    assert_eq!(Domain::named("human.interaction").unwrap().resolve(&ctx), some("human.interaction"));
}

// ---------------------------------------------------------------------------------------------
// resolve_all

#[test]
fn resolve_all_deduplicates_after_resolution_in_first_seen_order() {
    let e = event(&subject(Some("orc")), Some("calc"));
    let ctx = DomainContext::for_event(&e).contract_domain(Some("calc"));
    let domains = [
        Domain::Local,
        Domain::FromTriggeringEvent,   // calc
        Domain::FromSelfContract,      // calc (duplicate)
        Domain::OrchestrationContext,  // orc (cross-domain)
        Domain::FromCurrentSubject,    // orc (duplicate)
        Domain::Named("calc".into()),  // duplicate
        Domain::FromParentSubject,     // null (duplicate of Local)
        Domain::Named("audit".into()), // audit
    ];
    assert_eq!(resolve_all(&domains, &ctx), vec![None, some("calc"), some("orc"), some("audit")]);
    assert_eq!(resolve_all(&[], &ctx), Vec::<Option<String>>::new());
    assert_eq!(resolve_all(&[Domain::FromSelfContract, Domain::Local], &ctx), vec![some("calc"), None]);
}
