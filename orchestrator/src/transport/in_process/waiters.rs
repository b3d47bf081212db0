//! [`Waiters`]: the consumers of an in-process transport, grouped by the topics they listen on,
//! so that a lane becoming ready wakes one consumer that can take it, not every consumer.
//!
//! Consumers subscribed with equal [`Topics`] (the workers of one pool) share one group and one
//! [`Notify`]. A ready lane of topic `t` wakes one waiting consumer of each group listening on
//! `t` ([`Notify::notify_one`]; with nobody waiting, the group's next consumer to wait finds a
//! permit and looks again). Waking every consumer of a pool for every event (the herd of 64 node
//! workers each taking the lock to find nothing) cost more than the transport's own work.

use std::sync::{Arc, RwLock, RwLockReadGuard};

use tokio::sync::Notify;

use crate::transport::Topics;

/// The consumers of one set of topics.
struct Group {
    topics: Topics,
    notify: Arc<Notify>,
    /// Live subscriptions in the group; the group goes with the last.
    members: usize,
}

/// The consumers' groups (few: one per pool or subscription filter).
#[derive(Default)]
pub(super) struct Waiters {
    groups: RwLock<Vec<Group>>,
}

impl Waiters {
    fn groups(&self) -> RwLockReadGuard<'_, Vec<Group>> {
        self.groups.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds a consumer of `topics`: the [`Notify`] it waits on.
    pub(super) fn join(&self, topics: &Topics) -> Arc<Notify> {
        let mut groups = self.groups.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(group) = groups.iter_mut().find(|g| &g.topics == topics) {
            group.members += 1;
            return Arc::clone(&group.notify);
        }
        let notify = Arc::new(Notify::new());
        groups.push(Group { topics: topics.clone(), notify: Arc::clone(&notify), members: 1 });
        notify
    }

    /// Removes a consumer of `topics`.
    pub(super) fn leave(&self, topics: &Topics) {
        let mut groups = self.groups.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(at) = groups.iter().position(|g| &g.topics == topics) {
            groups[at].members -= 1;
            if groups[at].members == 0 {
                groups.swap_remove(at);
            }
        }
    }

    /// A lane of `topic` became ready: wakes one consumer of each group listening on it.
    pub(super) fn ready(&self, topic: &str) {
        for group in self.groups().iter().filter(|g| g.topics.contains(topic)) {
            group.notify.notify_one();
        }
    }

    /// Something any consumer may act on (a lane whose topic is not at hand, a retry due
    /// earlier): wakes one consumer of each group.
    pub(super) fn one_each(&self) {
        for group in self.groups().iter() {
            group.notify.notify_one();
        }
    }

    /// Every consumer must look (the transport closed and drained): wakes them all.
    pub(super) fn all(&self) {
        for group in self.groups().iter() {
            group.notify.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;

    fn only(topics: &[&str]) -> Topics {
        Topics::Only(topics.iter().map(|t| (*t).to_owned()).collect())
    }

    /// Whether a `notified()` registered before `act` completes within a short wait.
    async fn woken(notify: &Notify, act: impl FnOnce()) -> bool {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        act();
        tokio::time::timeout(Duration::from_millis(50), notified).await.is_ok()
    }

    #[tokio::test]
    async fn equal_topics_share_a_group_and_a_ready_lane_wakes_one_consumer_of_it() {
        let waiters = Waiters::default();
        let a1 = waiters.join(&only(&["a", "b"]));
        let a2 = waiters.join(&only(&["a", "b"]));
        let c = waiters.join(&only(&["c"]));
        assert!(Arc::ptr_eq(&a1, &a2), "one group for equal topics");
        assert!(!Arc::ptr_eq(&a1, &c));

        // Two consumers of one group and one of another wait: a ready lane of `b` wakes one
        // consumer of the first group only.
        let (first, second, other) = (a1.notified(), a2.notified(), c.notified());
        tokio::pin!(first, second, other);
        first.as_mut().enable();
        second.as_mut().enable();
        other.as_mut().enable();
        waiters.ready("b");
        let wait = Duration::from_millis(50);
        assert!(tokio::time::timeout(wait, &mut first).await.is_ok());
        assert!(
            tokio::time::timeout(wait, &mut second).await.is_err(),
            "the group's other consumer sleeps on"
        );
        assert!(tokio::time::timeout(wait, &mut other).await.is_err(), "not c's topic");
        // One of each group.
        waiters.one_each();
        assert!(tokio::time::timeout(wait, &mut second).await.is_ok());
        assert!(tokio::time::timeout(wait, &mut other).await.is_ok());
    }

    #[tokio::test]
    async fn every_topic_is_alls_and_closing_wakes_everyone() {
        let waiters = Waiters::default();
        let all = waiters.join(&Topics::All);
        let c = waiters.join(&only(&["c"]));
        assert!(woken(&all, || waiters.ready("z")).await);
        assert!(!woken(&c, || waiters.ready("z")).await);
        let (one, two) = (all.notified(), all.notified());
        tokio::pin!(one, two);
        one.as_mut().enable();
        two.as_mut().enable();
        waiters.all();
        let wait = Duration::from_millis(50);
        assert!(tokio::time::timeout(wait, &mut one).await.is_ok());
        assert!(tokio::time::timeout(wait, &mut two).await.is_ok());
    }

    #[tokio::test]
    async fn the_group_goes_with_its_last_member() {
        let waiters = Waiters::default();
        let topics = only(&["a"]);
        let first = waiters.join(&topics);
        let _second = waiters.join(&topics);
        waiters.leave(&topics);
        assert!(woken(&first, || waiters.ready("a")).await, "one member is left");
        waiters.leave(&topics);
        assert!(waiters.groups().is_empty());
        assert!(!woken(&first, || waiters.ready("a")).await, "nobody listens any more");
    }
}
