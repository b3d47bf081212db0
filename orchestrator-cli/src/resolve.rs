//! The workflow a command names: its full id (the subject), or a short id (a unique prefix of
//! its execution id), looked up in the workflow index without scanning the store.

use orchestrator::memory::{Journal, Page, WorkflowFilter, WorkflowIndex, WorkflowSummary};
use orchestrator::subject::Subject;

use crate::error::CliError;
use crate::store::Store;

/// The shortest prefix of an execution id taken as a short id.
pub(crate) const MIN_SHORT_ID: usize = 4;

/// How many workflows sharing a prefix are looked at (and named when the prefix is ambiguous).
const MATCHES_SHOWN: usize = 10;

/// A workflow found by [`resolve`].
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// Its id (its subject).
    pub(crate) id: String,
    /// What the workflow index says of it; `None` for a workflow that has a journal but is no
    /// longer listed (removed or archived by a retention).
    pub(crate) summary: Option<WorkflowSummary>,
}

/// Finds the workflow that `arg` names in `store` (named `location` in messages): a workflow id
/// (an orchestration subject) that the index lists or the journal holds, or a prefix of at least
/// [`MIN_SHORT_ID`] characters of exactly one workflow's execution id.
pub(crate) async fn resolve(store: &Store, location: &str, arg: &str) -> Result<Resolved, CliError> {
    let location = &redact(location);
    let failed = |e| CliError::Input(format!("cannot look the workflow up in {location}: {e}"));
    if let Ok(subject) = Subject::parse(arg) {
        let filter = WorkflowFilter {
            execution_id_prefix: Some(subject.execution_id().to_owned()),
            limit: MATCHES_SHOWN,
            ..WorkflowFilter::new()
        };
        let page = store.list(&filter).await.map_err(failed)?;
        if let Some(summary) = page.items.into_iter().find(|s| s.id == arg) {
            return Ok(Resolved { id: arg.to_owned(), summary: Some(summary) });
        }
        // Not listed: a workflow whose journal outlived its row still has a history.
        if !store.history(arg, 0, 1).await.map_err(failed)?.is_empty() {
            return Ok(Resolved { id: arg.to_owned(), summary: None });
        }
        return Err(not_found(arg, location));
    }
    if arg.chars().count() < MIN_SHORT_ID {
        return Err(CliError::Usage(format!(
            "{arg:?} is neither a workflow id (a subject) nor a short id: a short id has at least \
             {MIN_SHORT_ID} characters"
        )));
    }
    let filter = WorkflowFilter {
        execution_id_prefix: Some(arg.to_owned()),
        limit: MATCHES_SHOWN,
        ..WorkflowFilter::new()
    };
    let page = store.list(&filter).await.map_err(failed)?;
    pick(arg, location, page)
}

/// The one workflow of `page` (the workflows whose execution id starts with `arg`), or why not.
fn pick(arg: &str, location: &str, mut page: Page<WorkflowSummary>) -> Result<Resolved, CliError> {
    match page.items.len() {
        0 => Err(not_found(arg, location)),
        1 if page.next.is_none() => {
            let summary = page.items.remove(0);
            Ok(Resolved { id: summary.id.clone(), summary: Some(summary) })
        }
        _ => {
            let mut lines: Vec<String> = page
                .items
                .iter()
                .map(|s| {
                    let version =
                        s.orchestrator_version.as_deref().map(|v| format!("@{v}")).unwrap_or_default();
                    let execution = s.execution_id.as_deref().unwrap_or("-");
                    format!(
                        "  {}  {}{version}  {}  (execution id {execution})",
                        s.short_id(),
                        s.orchestrator,
                        s.status.as_str()
                    )
                })
                .collect();
            if page.next.is_some() {
                lines.push(format!("  … and more (only the newest {MATCHES_SHOWN} are shown)"));
            }
            Err(CliError::Input(format!(
                "short id {arg} is ambiguous in {location}: it starts the execution id of several \
                 workflows; give more characters, or the full id:\n{}",
                lines.join("\n")
            )))
        }
    }
}

/// `location` with a URL's password replaced by `***`, for messages.
pub(crate) fn redact(location: &str) -> String {
    let Some((scheme, rest)) = location.split_once("://") else { return location.to_owned() };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) if user_info.contains(':') => {
            let user = user_info.split_once(':').map_or(user_info, |(user, _)| user);
            format!("{scheme}://{user}:***@{host}{path}")
        }
        _ => location.to_owned(),
    }
}

fn not_found(arg: &str, location: &str) -> CliError {
    CliError::Input(format!("no workflow with id or short id {arg} in {location}"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::SystemTime;

    use orchestrator::memory::WorkflowState;

    use super::*;

    fn summary(execution: &str, orchestrator: &str) -> WorkflowSummary {
        WorkflowSummary {
            id: format!("id-{execution}"),
            execution_id: Some(execution.to_owned()),
            orchestrator: orchestrator.to_owned(),
            orchestrator_version: Some("1.0.0".to_owned()),
            status: WorkflowState::Active,
            initiator: None,
            parent: None,
            root: None,
            meta: BTreeMap::new(),
            created_at: SystemTime::UNIX_EPOCH,
            updated_at: SystemTime::UNIX_EPOCH,
            version: 1,
        }
    }

    #[test]
    fn passwords_are_not_shown() {
        assert_eq!(redact("postgres://u:secret@h:5432/db"), "postgres://u:***@h:5432/db");
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("store.sqlite"), "store.sqlite");
    }

    #[test]
    fn one_match_is_the_workflow() {
        let page = Page { items: vec![summary("abcd1234-x", "arvo.orc.a")], next: None };
        let found = pick("abcd", "db", page).unwrap();
        assert_eq!(found.id, "id-abcd1234-x");
        assert!(found.summary.is_some());
    }

    #[test]
    fn no_match_says_so() {
        let err = pick("abcd", "store.sqlite", Page { items: vec![], next: None }).unwrap_err();
        assert_eq!(err.to_string(), "no workflow with id or short id abcd in store.sqlite");
    }

    #[test]
    fn several_matches_are_listed_with_their_orchestrators() {
        let items = vec![summary("abcd1234-x", "arvo.orc.a"), summary("abcd9999-y", "arvo.orc.b")];
        let err = pick("abcd", "db", Page { items, next: None }).unwrap_err().to_string();
        assert!(err.contains("short id abcd is ambiguous in db"), "{err}");
        assert!(err.contains("abcd1234  arvo.orc.a@1.0.0  active"), "{err}");
        assert!(err.contains("abcd9999  arvo.orc.b@1.0.0"), "{err}");
        assert!(!err.contains("and more"), "{err}");
    }

    #[test]
    fn a_single_match_with_more_pages_is_still_ambiguous() {
        let items = vec![summary("abcd1234-x", "arvo.orc.a")];
        let next = Some(items[0].cursor());
        let err = pick("abcd", "db", Page { items, next }).unwrap_err().to_string();
        assert!(err.contains("ambiguous") && err.contains("and more"), "{err}");
    }
}
