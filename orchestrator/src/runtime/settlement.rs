//! [`Settlement`]: the one rule that decides how a delivery is settled, the same for every
//! transport.

use std::time::Duration;

use super::dead_letters::DeadLetterReason;
use super::retry::RetryPolicy;
use crate::event::Event;
use crate::violation::Violation;

/// How a delivery is settled.
#[derive(Debug, Clone, PartialEq)]
pub enum Settlement {
    /// Handled: publish these products, then forget the delivery.
    Ack(Vec<Event>),
    /// A transient failure: deliver the event again after this delay.
    Retry(Duration),
    /// A permanent failure, or retries exhausted: never deliver the event again.
    DeadLetter(DeadLetterReason),
}

/// What running a handler on a delivery gave: its result, or the message of its panic.
pub type Outcome = Result<Result<Vec<Event>, Violation>, String>;

/// Whether a violation may go away if the event is tried again later: a transaction violation
/// (lock denied, lock/read/write failure of the store). Contract, configuration and execution
/// violations are permanent.
pub fn is_transient(violation: &Violation) -> bool {
    violation.transaction_cause().is_some()
}

impl Settlement {
    /// Classifies the outcome of delivery `attempt` (1 for the first): success → [`Ack`]; a
    /// transient violation → [`Retry`] after [`RetryPolicy::delay`] while the policy allows
    /// another attempt, else [`DeadLetterReason::RetriesExhausted`]; a permanent violation →
    /// [`DeadLetterReason::Violation`]; a panic → [`DeadLetterReason::Panicked`].
    ///
    /// [`Ack`]: Settlement::Ack
    /// [`Retry`]: Settlement::Retry
    pub fn classify(outcome: Outcome, attempt: u32, policy: &RetryPolicy) -> Self {
        match outcome {
            Ok(Ok(produced)) => Self::Ack(produced),
            Ok(Err(violation)) if is_transient(&violation) => {
                if policy.may_retry(attempt) {
                    Self::Retry(policy.delay(attempt))
                } else {
                    Self::DeadLetter(DeadLetterReason::RetriesExhausted { attempts: attempt, violation })
                }
            }
            Ok(Err(violation)) => Self::DeadLetter(DeadLetterReason::Violation(violation)),
            Err(message) => Self::DeadLetter(DeadLetterReason::Panicked { message }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::violation::TransactionCause;

    fn policy() -> RetryPolicy {
        RetryPolicy { max_attempts: 3, ..RetryPolicy::default() }
    }

    #[test]
    fn success_is_an_ack_with_the_products() {
        assert_eq!(Settlement::classify(Ok(Ok(vec![])), 1, &policy()), Settlement::Ack(vec![]));
    }

    #[test]
    fn every_transaction_cause_is_retried_until_the_limit() {
        for cause in [
            TransactionCause::LockUnacquired,
            TransactionCause::LockFailure,
            TransactionCause::ReadFailure,
            TransactionCause::WriteFailure,
        ] {
            let violation = Violation::transaction(cause, "busy");
            for attempt in 1..3 {
                match Settlement::classify(Ok(Err(violation.clone())), attempt, &policy()) {
                    Settlement::Retry(delay) => assert!(delay <= policy().ceiling(attempt)),
                    other => panic!("{cause} on attempt {attempt}: {other:?}"),
                }
            }
            assert_eq!(
                Settlement::classify(Ok(Err(violation.clone())), 3, &policy()),
                Settlement::DeadLetter(DeadLetterReason::RetriesExhausted { attempts: 3, violation })
            );
        }
    }

    #[test]
    fn permanent_violations_and_panics_are_dead_letters_at_once() {
        for violation in [Violation::contract("bad"), Violation::config("bad"), Violation::execution("bad")] {
            assert_eq!(
                Settlement::classify(Ok(Err(violation.clone())), 1, &policy()),
                Settlement::DeadLetter(DeadLetterReason::Violation(violation))
            );
        }
        assert_eq!(
            Settlement::classify(Err("boom".to_owned()), 1, &policy()),
            Settlement::DeadLetter(DeadLetterReason::Panicked { message: "boom".to_owned() })
        );
    }
}
